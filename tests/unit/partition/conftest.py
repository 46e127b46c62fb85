"""Partitions over real logs in a tmp dir: a :class:`ReplicaManager` built the
way the app builds it (a worker pool for offloaded validations), no handler."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.config import BrokerConfig
from broker.log.manager import LogManager
from broker.partition.cluster_layout import ClusterLayout
from broker.partition.replica_manager import ReplicaManager
from broker.validator import NullRecorder

NOW_MS = 1_700_000_000_000


class Replicas:
    """A LogManager in ``data_dir`` and the ReplicaManager over it."""

    def __init__(
        self,
        data_dir: Path,
        *,
        inline_budget: int | None = None,
        layout: ClusterLayout | None = None,
    ) -> None:
        self.config = BrokerConfig.from_properties({"log.dirs": str(data_dir)})
        self.log_manager = LogManager(self.config.log_dirs, self.config)
        self.log_manager.startup()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=2)
        #: every function an append sent to the worker pool
        self.offloaded: list[Callable[[], Any]] = []

        def offload(fn: Callable[[], Any]) -> Awaitable[Any]:
            self.offloaded.append(fn)
            return asyncio.get_running_loop().run_in_executor(self.pool, fn)

        self.manager = ReplicaManager(
            self.log_manager,
            recorder=NullRecorder(),
            time_ms=lambda: NOW_MS,
            offload=offload,
            inline_budget=inline_budget,
            layout=layout,
        )

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.log_manager.shutdown()


@pytest.fixture
def make_replicas(tmp_path: Path) -> Iterator[Callable[..., Replicas]]:
    made: list[Replicas] = []

    def make(**kwargs: Any) -> Replicas:
        replicas = Replicas(tmp_path / f"data{len(made)}", **kwargs)
        made.append(replicas)
        return replicas

    yield make
    for replicas in made:
        replicas.close()


@pytest.fixture
def replicas(make_replicas: Callable[..., Replicas]) -> Replicas:
    return make_replicas()
