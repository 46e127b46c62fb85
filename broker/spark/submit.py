"""The script spark-submit runs: ``broker pipeline`` on a cluster.

::

    spark-submit --master spark://HOST:7077 --py-files broker.zip \\
        broker/spark/submit.py audit /data/kafka --out /shared/audit

(README, "Log pipeline on Spark", says how ``broker`` reaches the executors.)
"""

from __future__ import annotations

import sys

from broker.spark.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
