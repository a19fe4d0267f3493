/*
 * PyFlink's process operator (process mode) for the Python function that computes an agent's
 * keys (DataStream.key_by with a Python key selector), finishing the bundle of a lone input
 * at once (LoneInputs.java) so that a message reaches the agent without waiting for the
 * bundle's time check. Compiled with DrainingKeyedProcessOperator.java (draining.py).
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

    private transient LoneInputs inputs;

    public KeyByProcessOperator(
            Configuration config,
            DataStreamPythonFunctionInfo functionInfo,
            TypeInformation<IN> inputTypeInfo,
            TypeInformation<OUT> outputTypeInfo) {
        super(config, functionInfo, inputTypeInfo, outputTypeInfo);
    }

    @Override
    public void open() throws Exception {
        inputs = new LoneInputs(config.get(PythonOptions.MAX_BUNDLE_TIME_MILLS));
        super.open();
    }

    @Override
    public void processElement(StreamRecord<IN> element) throws Exception {
        boolean lone = inputs.arrived(getProcessingTimeService().getCurrentProcessingTime());
        super.processElement(element);
        if (lone) {
            invokeFinishBundle();
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
