"""A pipeline failure is shown as its root cause: the Python exception raised in a batch,
not the Java StreamingQueryException and Py4J frames around it."""

from __future__ import annotations

from pathlib import Path

from headwater.pipeline.quiet import log4j_options, one_line, root_cause

SPARK_TEXT = """\
[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in
foreach batch sink. Reason: An exception was raised by the Python Proxy. Return Message:
Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/py4j/clientserver.py", line 617, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
  File "/src/headwater/pipeline/runner.py", line 398, in on_batch
    apply(ranges, batch_id)
  File "/src/headwater/pipeline/delta_target.py", line 210, in _evolve
    raise SchemaEvolutionError(msg)
headwater.pipeline.delta_target.SchemaEvolutionError: table inventory.customers: column \
email changed type from string to int; Delta cannot follow (headwater.pipeline.schema.evolution)
\tat py4j.Protocol.getReturnValue(Protocol.java:476)
\tat org.apache.spark.sql.execution.streaming.MicroBatchExecution.runBatch(MBE.scala:800)
Caused by: org.apache.spark.api.python.PythonException: wrapped
"""


def test_root_cause_is_the_python_exception_of_the_batch() -> None:
    assert root_cause(SPARK_TEXT) == (
        "SchemaEvolutionError: table inventory.customers: column email changed type from "
        "string to int; Delta cannot follow (headwater.pipeline.schema.evolution)")


def test_a_java_only_failure_names_its_last_cause() -> None:
    text = ("org.apache.spark.sql.streaming.StreamingQueryException: Query failed\n"
            "\tat org.apache.spark.X.run(X.scala:1)\n"
            "Caused by: java.io.FileNotFoundException: /data/topics/x.log (No such file)\n"
            "\tat java.io.FileInputStream.open0(Native Method)\n")
    assert root_cause(text) == "FileNotFoundException: /data/topics/x.log (No such file)"


def test_one_line_of_plain_errors_and_wrapped_ones() -> None:
    assert one_line(ValueError("bad value\nmore")) == "bad value"
    assert one_line(RuntimeError(SPARK_TEXT)).startswith("SchemaEvolutionError: table")


def test_log4j_configuration_sends_spark_logs_to_a_file(tmp_path: Path) -> None:
    opts = log4j_options(tmp_path / "logs")
    conf = (tmp_path / "logs" / "log4j2.properties").read_text()
    conf_path = (tmp_path / "logs").resolve() / "log4j2.properties"
    assert opts == f"-Dlog4j2.configurationFile=file:{conf_path}"
    assert f"fileName = {(tmp_path / 'logs' / 'spark.log').resolve()}" in conf
    assert "console" not in conf.lower().replace("# written", "")
