"""The log pipeline on Spark: read, audit, export and convert Kafka log dirs.

Needs the ``spark`` extra (PySpark, pandas, pyarrow, matplotlib); nothing
else in ``broker`` imports it (import-linter contract). Modules, bottom up:

``layout``        which segment files a path names; offset coverage of each
``segment_scan``  framing of damaged segments, batch facts, records
``index_check``   ``.index`` / ``.timeindex`` entries checked against the ``.log``
``selection``     topics/partitions/offsets wanted (options, pushed filters)
``splits``        segments cut into input partitions (offset index)
``schemas``       row layouts of the three reading levels
``rows``          one split turned into Arrow record batches
``datasource``    the ``kafka-log`` Spark data source
``session``       a SparkSession set up for the pipeline (and its JVM stopped)
``plain``         the audit in one process (reference and benchmark baseline)
``audit``         ``broker pipeline audit`` (Parquet tables) and ``report`` (Markdown + PNG)
``export``        ``broker pipeline export``
``upgrade``       one partition rewritten as v2 through ``broker.log``
``convert``       ``broker pipeline convert`` (one task per partition)
``cli``           the ``broker pipeline`` sub-commands
"""
