"""kafka-mc: model checking and property testing for Apache Kafka's replication protocol."""

__version__ = "0.1.0"
