"""The core: records, codecs, identities, durable calls and replay. No Flink or Kafka here."""
