"""A SparkSession set up for the pipeline, and stopped with its JVM.

What a local session on these machines needs (measured on the 2-core test machines):

* ``SPARK_LOCAL_IP=127.0.0.1`` (else the driver binds the outside interface)
  and ``PYSPARK_PYTHON`` = this interpreter (the workers must import
  ``broker`` and pyarrow) -- set only when the master is ``local...`` and the
  caller did not set them;
* the UI off, few shuffle partitions (the pipeline's aggregates are small),
  Python filter pushdown on (the ``kafka-log`` reader takes filters), a quiet
  log4j2 configuration, the console progress bar on or off;
* optionally a JVM class-data-sharing archive under a cache directory
  (``$BROKER_SPARK_CACHE``, else ``$XDG_CACHE_HOME/broker-spark``, else
  ``~/.cache/broker-spark``): the first session writes it when its JVM
  exits, later ones map it and start in about half the time. Its name
  carries the PySpark version, so a new install makes a new archive.

Every ``--conf`` the caller gives wins over these defaults.

:func:`stop` ends the session *and* the gateway JVM (by closing its stdin,
which makes it exit normally, so the archive gets written); nothing is left
running.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from broker.spark.datasource import KafkaLogDataSource

# WARN is the level Spark gives an interpreter session (PySpark is one): the
# root at WARN keeps Spark from announcing a change; the loggers that warn
# about this machine rather than the job are quieter
QUIET_LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.python.filterPushdown.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.driver.memory": "2g",
    # the records level has 22 columns: plans print whole
    "spark.sql.debug.maxToStringFields": "100",
}


def cache_dir() -> Path:
    explicit = os.environ.get("BROKER_SPARK_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "broker-spark"


def _log4j_file(directory: Path) -> Path:
    path = directory / "log4j2-quiet.properties"
    if not path.exists() or path.read_text() != QUIET_LOG4J2:
        directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(QUIET_LOG4J2)
        tmp.replace(path)
    return path


def cds_archive_path(directory: Path) -> Path:
    """The archive for this PySpark install and Java (their identity in the name)."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME", "")
    key = f"{pyspark.__version__}|{pyspark.__file__}|{java_home}|{sys.prefix}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return directory / f"spark-{pyspark.__version__}-{digest}.jsa"


def _java_options(directory: Path, use_cds: bool) -> tuple[str, tuple[Path, Path] | None]:
    """Driver JVM options, and (temporary, final) archive paths when this run dumps one."""
    opts = [f"-Dlog4j2.configurationFile=file:{_log4j_file(directory)}"]
    dumping: tuple[Path, Path] | None = None
    if use_cds:
        archive = cds_archive_path(directory)
        if archive.exists():
            opts += [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", "-Xlog:cds=off"]
        else:
            tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
            dumping = (tmp, archive)
            opts += [f"-XX:ArchiveClassesAtExit={tmp}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    return " ".join(opts), dumping


class PipelineSession:
    """A started session; use as a context manager or call :meth:`stop`."""

    def __init__(self, spark: Any, dumping_archive: tuple[Path, Path] | None) -> None:
        self.spark = spark
        self._dumping_archive = dumping_archive
        self._stopped = False

    def __enter__(self) -> PipelineSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the session, then the JVM it runs in; move a freshly dumped
        class-data archive into place."""
        if self._stopped:
            return
        self._stopped = True
        from pyspark import SparkContext

        gateway = SparkContext._gateway
        proc = getattr(gateway, "proc", None)
        self.spark.stop()
        if gateway is not None:
            gateway.shutdown()
        if proc is not None:
            if proc.stdin is not None:
                proc.stdin.close()  # the gateway exits on EOF (PythonGatewayServer)
            try:
                proc.wait(timeout)
            except Exception:
                proc.kill()
                proc.wait()
        SparkContext._gateway = None
        SparkContext._jvm = None
        if self._dumping_archive is not None:
            tmp, final = self._dumping_archive
            if tmp.exists() and tmp.stat().st_size > 0:
                tmp.replace(final)
            else:
                tmp.unlink(missing_ok=True)


def start(
    master: str = "local[*]",
    conf: Mapping[str, str] | None = None,
    *,
    app_name: str = "broker-pipeline",
    progress: bool = True,
    use_cds: bool = True,
) -> PipelineSession:
    """A session with the ``kafka-log`` source registered (see the module docstring)."""
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    directory = cache_dir()
    settings = dict(DEFAULT_CONF)
    settings["spark.ui.showConsoleProgress"] = "true" if progress else "false"
    java_opts, dumping = _java_options(directory, use_cds)
    settings["spark.driver.extraJavaOptions"] = java_opts
    user = dict(conf or {})
    if "spark.driver.extraJavaOptions" in user:
        settings["spark.driver.extraJavaOptions"] = (
            java_opts + " " + user.pop("spark.driver.extraJavaOptions")
        )
    settings.update(user)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.dataSource.register(KafkaLogDataSource)
    return PipelineSession(spark, dumping)


def default_master(requested: str | None) -> str:
    """``requested``, else the master spark-submit set (``spark.master`` in the
    environment it gives PySpark), else ``local[*]``."""
    if requested:
        return requested
    submitted = os.environ.get("MASTER") or _submitted_master()
    return submitted or "local[*]"


def _submitted_master() -> str | None:
    # spark-submit starts the JVM first and hands PySpark its configuration
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark import SparkConf

    value = SparkConf().get("spark.master")
    return str(value) if value else None


def parse_conf(pairs: list[str] | None) -> dict[str, str]:
    """``--conf k=v`` values as a dict (ValueError for a pair without '=')."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf takes key=value, got {pair!r}")
        out[key.strip()] = value
    return out
