"""Per-topic configuration overrides, persisted in the log directories.

Kafka keeps topic configs in its metadata log; a single broker keeps them
beside its data instead, as one small Java-properties file per topic in the
*root* of every log directory::

    <log.dir>/topic-config-<topic>.properties
      #
      #<date>
      retention.ms=3600000
      segment.bytes=1048576

Only overrides are stored (keys of ``TOPIC_KEYS``); the effective config is
the broker's topic defaults plus these. A file in the root of a log dir is
ignored by Kafka's loader (it only opens folders), so Kafka still reads our
directories. Files are written atomically (tmp + fsync + rename); a topic's
overrides are the same in every log dir, and loading takes the union
(a later dir wins only for a topic missing from earlier ones).

``alter`` validates the new overrides, persists them and returns the new
:class:`~broker.config.TopicConfig`; the log manager hands it to the topic's
partition logs, where it takes effect on the next append.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from broker.config import BrokerConfig, TopicConfig, parse_properties
from broker.log.checkpoints import atomic_write, encode_properties

PREFIX = "topic-config-"
SUFFIX = ".properties"


class TopicConfigStore:
    """Topic overrides by topic name; thread-safe."""

    def __init__(self, log_dirs: list[Path], broker_config: BrokerConfig) -> None:
        self._log_dirs = log_dirs
        self._broker_config = broker_config
        self._overrides: dict[str, dict[str, str]] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        overrides: dict[str, dict[str, str]] = {}
        for log_dir in self._log_dirs:
            if not log_dir.is_dir():
                continue
            for path in sorted(log_dir.glob(f"{PREFIX}*{SUFFIX}")):
                topic = path.name[len(PREFIX) : -len(SUFFIX)]
                if topic and topic not in overrides:
                    overrides[topic] = parse_properties(path.read_text("latin-1"))
        with self._lock:
            self._overrides = overrides

    def overrides(self, topic: str) -> dict[str, str]:
        with self._lock:
            return dict(self._overrides.get(topic, {}))

    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._overrides)

    def config(self, topic: str) -> TopicConfig:
        """Broker defaults plus the topic's overrides."""
        return self._broker_config.topic_config(self.overrides(topic))

    def set(self, topic: str, overrides: Mapping[str, object]) -> TopicConfig:
        """Replace the topic's overrides (validated first; InvalidConfigError)."""
        values = {
            name: str(value).lower() if isinstance(value, bool) else str(value)
            for name, value in overrides.items()
        }
        config = self._broker_config.topic_config(values)
        data = encode_properties(values)
        with self._lock:
            for log_dir in self._log_dirs:
                atomic_write(log_dir / f"{PREFIX}{topic}{SUFFIX}", data)
            self._overrides[topic] = values
        return config

    def alter(
        self, topic: str, set_keys: Mapping[str, object], delete_keys: list[str] | None = None
    ) -> TopicConfig:
        """Incremental change: set some keys, remove others (IncrementalAlterConfigs)."""
        current: dict[str, object] = dict(self.overrides(topic))
        current.update(set_keys)
        for key in delete_keys or ():
            current.pop(key, None)
        return self.set(topic, current)

    def delete(self, topic: str) -> None:
        with self._lock:
            self._overrides.pop(topic, None)
            for log_dir in self._log_dirs:
                (log_dir / f"{PREFIX}{topic}{SUFFIX}").unlink(missing_ok=True)
