/*
 * PyFlink's process operator (process mode) for the Python function that computes an agent's
 * keys (DataStream.key_by with a Python key selector), handing on a lone input at once.
 *
 * PyFlink finishes a bundle, the only moment its inputs reach the Python worker, when a
 * periodic check finds the last finish a bundle time (python.fn-execution.bundle.time) old,
 * so an input that comes alone waits up to twice the bundle time. Here an input that follows
 * the one before by at least the bundle time (a chat user's reply to the agent's last output)
 * finishes its bundle at once, and that finish does not restart the check's wait: inputs
 * right behind it share the check's next bundle as before. At most one more bundle per
 * bundle time. The agent's own operator does not do this: there, a bundle of one per burst
 * of inputs cost one key's back-to-back runs most of their throughput (docs/flink.md).
 * Compiled with DrainingKeyedProcessOperator.java (draining.py).
 */
package io.actionjournal.flink;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.python.PythonOptions;
import org.apache.flink.streaming.api.functions.python.DataStreamPythonFunctionInfo;
import org.apache.flink.streaming.api.operators.python.process.AbstractExternalDataStreamPythonFunctionOperator;
import org.apache.flink.streaming.api.operators.python.process.ExternalPythonProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

public class KeyByProcessOperator<IN, OUT> extends ExternalPythonProcessOperator<IN, OUT> {
    private static final long serialVersionUID = 1L;

    private transient long bundleTime; // ms
    private transient long lastInput; // processing time of the last input, ms

    public KeyByProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo functionInfo,
            TypeInformation<IN> inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, functionInfo, inputTypeInfo, outputTypeInfo);
    }

    @Override
    public void open() throws Exception {
        bundleTime = config.get(PythonOptions.MAX_BUNDLE_TIME_MILLS);
        super.open();
    }

    @Override
    public void processElement(StreamRecord<IN> element) throws Exception {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        boolean lone = now - lastInput >= bundleTime;
        lastInput = now;
        super.processElement(element);
        if (lone) {
            long cadence = lastFinishBundleTime;
            invokeFinishBundle();
            lastFinishBundleTime = cadence;
        }
    }

    /** PyFlink's operator chaining rebuilds operators through copy: stay this class. */
    @Override
    public <T> AbstractExternalDataStreamPythonFunctionOperator<T> copy(
            DataStreamPythonFunctionInfo functionInfo, TypeInformation<T> outputTypeInfo) {
        return new KeyByProcessOperator<>(
                getConfiguration(), functionInfo, getInputTypeInfo(), outputTypeInfo);
    }
}
