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
 *
 * Finished runs are pushed, not polled for: the Python function reports each finished run's
 * key (RunWakeups.java), and the operator fires that key's timer at once and finishes the
 * bundle, so the run's outputs leave within milliseconds however long it took. The timers
 * the Python function registers itself only resume keys after a restore.
 */
package io.actionjournal.flink;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.functions.python.DataStreamPythonFunctionInfo;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.python.process.AbstractExternalDataStreamPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.process.ExternalPythonKeyedProcessOperator;
import org.apache.flink.streaming.api.utils.PythonTypeUtils;
import org.apache.flink.types.Row;

public class DrainingKeyedProcessOperator<OUT> extends ExternalPythonKeyedProcessOperator<OUT> {
    private static final long serialVersionUID = 1L;

    /** Job parameter: "port token" of the socket the Python function reports finished runs on. */
    public static final String WAKEUPS = "actionjournal.wakeups";

    private transient RunWakeups wakeups;
    private transient TypeSerializer<Row> keySerializer;
    private transient boolean finished;

    public DrainingKeyedProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo functionInfo,
            RowTypeInfo inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, functionInfo, inputTypeInfo, outputTypeInfo);
    }

    @Override
    public void open() throws Exception {
        keySerializer =
                PythonTypeUtils.TypeInfoToSerializerConverter.typeInfoSerializerConverter(
                        new RowTypeInfo(((RowTypeInfo) getInputTypeInfo()).getTypeAt(0)));
        int priority = getOperatorConfig().getChainIndex();
        wakeups =
                new RunWakeups(
                        getContainingTask().getMailboxExecutorFactory().createExecutor(priority),
                        this::emitFinishedRuns);
        super.open(); // starts the Python function, which connects to wakeups
    }

    @Override
    public Map<String, String> getInternalParameters() {
        Map<String, String> parameters = new HashMap<>(super.getInternalParameters());
        if (wakeups != null) {
            parameters.put(WAKEUPS, wakeups.address());
        }
        return parameters;
    }

    /** On the task thread: each key's timer fires now, and the bundle finishes now. */
    private void emitFinishedRuns(List<byte[]> keys) throws Exception {
        if (finished) {
            return; // the end of input drained every run
        }
        DataInputDeserializer in = new DataInputDeserializer();
        for (byte[] key : keys) {
            in.setBuffer(key);
            Row row = keySerializer.deserialize(in);
            onProcessingTime(new TimerHeapInternalTimer<>(Long.MIN_VALUE, row, VoidNamespace.INSTANCE));
        }
        invokeFinishBundle();
    }

    @Override
    public void finish() throws Exception {
        finished = true;
        super.finish();
    }

    @Override
    public void close() throws Exception {
        try {
            if (wakeups != null) {
                wakeups.close();
            }
        } finally {
            super.close();
        }
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
