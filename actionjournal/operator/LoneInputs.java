/*
 * Which inputs of a Python operator come alone: those that follow the input before them by
 * at least the bundle time (python.fn-execution.bundle.time). PyFlink finishes a bundle, the
 * only moment its inputs reach the Python worker, when a periodic check finds the last finish
 * a bundle time old: a lone input waits up to twice the bundle time for it. The operators
 * that use this finish a lone input's bundle at once instead (a chat user's reply to the
 * agent's last output starts its run within a millisecond), while inputs closer together
 * share bundles as before: at most one more bundle per bundle time. Compiled with
 * DrainingKeyedProcessOperator.java (draining.py).
 */
package io.actionjournal.flink;

final class LoneInputs {
    private final long bundleTime; // ms
    private long lastInput; // processing time of the last input, ms

    LoneInputs(long bundleTime) {
        this.bundleTime = bundleTime;
    }

    /** An input arrived at processing time {@code now}: whether it came alone. */
    boolean arrived(long now) {
        boolean lone = now - lastInput >= bundleTime;
        lastInput = now;
        return lone;
    }
}
