"""The JVM parts Headwater runs beside Python: Spark's Delta, Iceberg and Kafka connectors,
Apache Kafka brokers and Kafka Connect workers for the tests.  Jars come from Maven Central
into a cache outside the repository (`artifacts`), never committed."""
