/*
 * PyFlink's keyed process operator (process mode), with the timers of the bundle a
 * checkpoint barrier finishes registered before the snapshot, and the job's journal binding
 * kept in operator state.
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
 * bundle (unless one finished within the bundle time), so the run's outputs leave within
 * milliseconds however long it took. The timers
 * the Python function registers itself only resume keys after a restore.
 *
 * Journal binding: PyFlink gives Python functions keyed state only, so a restore cannot
 * tell, before some key runs, which journal the state was written against. The Python
 * function reports its binding (journal identity and epoch, JSON) over the wake-up socket
 * when it opens; this operator checkpoints it as union list state, and hands what it
 * restored to the Python function's open() as job parameters (initializeState runs before
 * open() builds the Python runner). See docs/upgrade.md. It also keeps the bindings restored
 * before (the history, at most MAX_HISTORY): keys that have not run since an upgrade keep
 * markers that reference those journals by a short reference, not by name
 * (actionjournal/operator/markers.py).
 *
 * Nothing the Python function emits is kept back here, so PyFlink may chain the Python
 * operators after this one into the same Python worker. Chained, whatever the function
 * yields reaches the next function as an element, side outputs included: the function
 * yields dead letters only when their side output is consumed (job parameter DEAD_LETTERS),
 * and a consumed side output keeps PyFlink from chaining this operator with the next.
 */
package io.actionjournal.flink;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.python.PythonOptions;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.functions.python.DataStreamPythonFunctionInfo;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.python.process.AbstractExternalDataStreamPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.process.ExternalPythonKeyedProcessOperator;
import org.apache.flink.streaming.api.utils.PythonTypeUtils;
import org.apache.flink.types.Row;
import org.apache.flink.util.OutputTag;

public class DrainingKeyedProcessOperator<OUT> extends ExternalPythonKeyedProcessOperator<OUT> {
    private static final long serialVersionUID = 1L;

    /** Job parameter: "port token" of the socket the Python function reports finished runs on. */
    public static final String WAKEUPS = "actionjournal.wakeups";

    private transient RunWakeups wakeups;
    private transient TypeSerializer<Row> keySerializer;
    private transient boolean finished;
    private transient long bundleTime; // python.fn-execution.bundle.time, ms

    /** Job parameter: "true" when the job consumes the dead letters' side output. */
    public static final String DEAD_LETTERS = "actionjournal.dead-letters";
    /** The dead letters' side output (DEAD_LETTERS in actionjournal/operator/flink.py). */
    private static final String DEAD_LETTERS_TAG = "actionjournal-dead-letters";
    /** Job parameter: the bindings restored with the state, a JSON array ("[]": none). */
    public static final String RESTORED_BINDINGS = "actionjournal.restored-bindings";
    /** Job parameter: "true" when the operator's state was restored from a checkpoint. */
    public static final String RESTORED = "actionjournal.restored";

    /** Job parameter: the older bindings restored with the state, a JSON array ("[]": none). */
    public static final String RESTORED_HISTORY = "actionjournal.restored-history";

    private static final int MAX_HISTORY = 16; // MAX_HISTORY in actionjournal/operator/restore.py

    private static final ListStateDescriptor<String> BINDINGS =
            new ListStateDescriptor<>("actionjournal-journal-bindings", StringSerializer.INSTANCE);
    private static final ListStateDescriptor<String> HISTORY =
            new ListStateDescriptor<>("actionjournal-journal-history", StringSerializer.INSTANCE);

    private transient ListState<String> bindingState;
    private transient ListState<String> historyState;
    private transient boolean restored;
    private transient List<String> restoredBindings = Collections.emptyList();
    private transient List<String> restoredHistory = Collections.emptyList();
    private transient List<String> bindings = Collections.emptyList(); // what a checkpoint keeps
    private transient List<String> history = Collections.emptyList();

    public DrainingKeyedProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo functionInfo,
            RowTypeInfo inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, functionInfo, inputTypeInfo, outputTypeInfo);
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        bindingState = context.getOperatorStateStore().getUnionListState(BINDINGS);
        historyState = context.getOperatorStateStore().getUnionListState(HISTORY);
        restored = context.isRestored();
        restoredBindings = distinct(bindingState.get()); // one entry per subtask
        restoredHistory = distinct(historyState.get());
        bindings = restoredBindings; // until the Python function reports its own
        history = restoredHistory;
    }

    private static List<String> distinct(Iterable<String> entries) {
        LinkedHashSet<String> distinct = new LinkedHashSet<>();
        for (String entry : entries) {
            distinct.add(entry);
        }
        return new ArrayList<>(distinct);
    }

    /** The function reported its binding: the restored ones other than it become history. */
    private void bind(String binding) {
        LinkedHashSet<String> older = new LinkedHashSet<>(restoredHistory);
        older.addAll(restoredBindings);
        older.remove(binding);
        List<String> kept = new ArrayList<>(older);
        history = kept.subList(Math.max(0, kept.size() - MAX_HISTORY), kept.size());
        bindings = Collections.singletonList(binding);
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        bindingState.update(bindings);
        historyState.update(history);
    }

    @Override
    public void open() throws Exception {
        keySerializer =
                PythonTypeUtils.TypeInfoToSerializerConverter.typeInfoSerializerConverter(
                        new RowTypeInfo(((RowTypeInfo) getInputTypeInfo()).getTypeAt(0)));
        bundleTime = config.get(PythonOptions.MAX_BUNDLE_TIME_MILLS);
        int priority = getOperatorConfig().getChainIndex();
        wakeups =
                new RunWakeups(
                        getContainingTask().getMailboxExecutorFactory().createExecutor(priority),
                        this::emitFinishedRuns,
                        this::bind);
        super.open(); // starts the Python function, which connects to wakeups
    }

    @Override
    public Map<String, String> getInternalParameters() {
        Map<String, String> parameters = new HashMap<>(super.getInternalParameters());
        if (wakeups != null) {
            parameters.put(WAKEUPS, wakeups.address());
        }
        parameters.put(RESTORED, String.valueOf(restored));
        boolean deadLetters = false;
        for (OutputTag<?> tag : getSideOutputTags()) {
            deadLetters |= DEAD_LETTERS_TAG.equals(tag.getId());
        }
        parameters.put(DEAD_LETTERS, String.valueOf(deadLetters));
        parameters.put(RESTORED_BINDINGS, "[" + String.join(",", restoredBindings) + "]");
        parameters.put(RESTORED_HISTORY, "[" + String.join(",", restoredHistory) + "]");
        return parameters;
    }

    /**
     * On the task thread: each key's timer fires now. The bundle finishes now unless one
     * finished within the bundle time: then the bundle's time check finishes it, so runs
     * finishing one after another share a bundle (a round trip to the Python worker each)
     * while a lone finished run still leaves at once. When no run is left in the function
     * ({@code idle}), that finish does not restart the time check's wait: the next input,
     * likely a reply to this output, goes at the check's next tick instead of a full bundle
     * time from now (busy keys keep their bundles as they were).
     */
    private void emitFinishedRuns(List<byte[]> keys, boolean idle) throws Exception {
        if (finished) {
            return; // the end of input drained every run
        }
        DataInputDeserializer in = new DataInputDeserializer();
        for (byte[] key : keys) {
            in.setBuffer(key);
            Row row = keySerializer.deserialize(in);
            onProcessingTime(new TimerHeapInternalTimer<>(Long.MIN_VALUE, row, VoidNamespace.INSTANCE));
        }
        if (getProcessingTimeService().getCurrentProcessingTime() - lastFinishBundleTime
                >= bundleTime) {
            long cadence = lastFinishBundleTime;
            invokeFinishBundle();
            if (idle) {
                lastFinishBundleTime = cadence;
            }
        }
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
