/*
 * Kafka records for agent jobs, as PyFlink's Kafka builders cannot express them: in, each
 * record's key next to its value (the agent is keyed by it); out, a record keyed like its
 * input with the output event's id in a header, so downstream can deduplicate. Compiled on
 * demand by actionjournal/operator/javac.py against PyFlink's jars and the shaded
 * flink-sql-connector-kafka jar (whose Kafka client classes are relocated).
 */
package io.actionjournal.flink;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.flink.kafka.shaded.org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.Header;
import org.apache.flink.kafka.shaded.org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.flink.types.Row;
import org.apache.flink.util.Collector;

public final class KafkaMessages {
    /** The header holding the id of the output event a record carries. */
    public static final String EVENT_ID_HEADER = "actionjournal-event-id";

    private KafkaMessages() {}

    /** Each record as Row(key, value, topic, partition, offset, timestamp); key may be null. */
    public static final class Reader implements KafkaRecordDeserializationSchema<Row> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Row> out) {
            out.collect(Row.of(record.key(), record.value(), record.topic(), record.partition(),
                    record.offset(), record.timestamp()));
        }

        @Override
        public TypeInformation<Row> getProducedType() {
            return Types.ROW_NAMED(
                    new String[] {"key", "value", "topic", "partition", "offset", "timestamp"},
                    Types.PRIMITIVE_ARRAY(Types.BYTE), Types.PRIMITIVE_ARRAY(Types.BYTE),
                    Types.STRING, Types.INT, Types.LONG, Types.LONG);
        }
    }

    /**
     * Row(key, value, event id) to a record of the topic. No timestamp is set (the producer
     * stamps the record): agent outputs come from timers and carry no event time.
     */
    public static final class Writer implements KafkaRecordSerializationSchema<Row> {
        private static final long serialVersionUID = 1L;
        private final String topic;

        public Writer(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(
                Row element, KafkaSinkContext context, Long timestamp) {
            byte[] eventId = ((String) element.getField(2)).getBytes(StandardCharsets.UTF_8);
            List<Header> headers = List.of(new RecordHeader(EVENT_ID_HEADER, eventId));
            return new ProducerRecord<>(topic, null, null, (byte[]) element.getField(0),
                    (byte[]) element.getField(1), headers);
        }
    }
}
