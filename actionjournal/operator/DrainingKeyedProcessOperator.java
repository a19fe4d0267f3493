/*
 * PyFlink's keyed process operator (process mode), with the timers of the bundle a
 * checkpoint barrier finishes registered before the snapshot.
 *
 * Timers registered from Python arrive while a bundle finishes and are registered by
 * mailbox actions. prepareSnapshotPreBarrier finishes the open bundle and the snapshot
 * follows in the same step, before those actions run, so without this the checkpoint
 * holds the keyed state written in that bundle but not its timers. Compiled on demand
 * by actionjournal/operator/javac.py against the installed PyFlink's jars.
 *
 * Timers reach Python without their timestamp: the agent emits every output from a timer,
 * and PyFlink stamps what a timer emits with the timer's time (Long.MAX_VALUE for the
 * end-of-input drain, which a Kafka broker rejects). Outputs then carry no timestamp.
 */
package io.actionjournal.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.functions.python.DataStreamPythonFunctionInfo;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.python.process.AbstractExternalDataStreamPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.process.ExternalPythonKeyedProcessOperator;
import org.apache.flink.types.Row;

public class DrainingKeyedProcessOperator<OUT> extends ExternalPythonKeyedProcessOperator<OUT> {
    private static final long serialVersionUID = 1L;

    public DrainingKeyedProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo functionInfo,
            RowTypeInfo inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, functionInfo, inputTypeInfo, outputTypeInfo);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        super.prepareSnapshotPreBarrier(checkpointId); // finishes the open bundle
        drainUnregisteredTimers(); // registers its timers now, not after the snapshot
    }

    @Override
    public void onEventTime(InternalTimer<Row, Object> timer) throws Exception {
        super.onEventTime(untimed(timer));
    }

    @Override
    public void onProcessingTime(InternalTimer<Row, Object> timer) throws Exception {
        super.onProcessingTime(untimed(timer));
    }

    /** The timer with "no timestamp" (Long.MIN_VALUE): what it emits gets none either. */
    private static InternalTimer<Row, Object> untimed(InternalTimer<Row, Object> timer) {
        return new TimerHeapInternalTimer<>(Long.MIN_VALUE, timer.getKey(), timer.getNamespace());
    }

    /** PyFlink's operator chaining rebuilds operators through copy: stay this class. */
    @Override
    public <T> AbstractExternalDataStreamPythonFunctionOperator<T> copy(
            DataStreamPythonFunctionInfo functionInfo, TypeInformation<T> outputTypeInfo) {
        return new DrainingKeyedProcessOperator<>(
                getConfiguration(), functionInfo, (RowTypeInfo) getInputTypeInfo(), outputTypeInfo);
    }
}
