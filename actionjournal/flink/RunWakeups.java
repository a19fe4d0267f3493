/*
 * The keys whose runs just finished, reported by the agent's Python function over a loopback
 * socket and handed to the task thread as mailbox actions; and the job's journal binding.
 *
 * A Python function can emit only while it handles something Flink sent it (an element or a
 * timer), and a run finishes on a thread of its own in between. Without this the operator
 * learns of a finished run at the key's next timer, which the Python function must guess. The
 * function connects once (port and token from the job parameter WAKEUPS), sends the token,
 * then writes each finished run's key as [int length][the key, serialized as Flink keys it],
 * prefixed with [int -2] when no run is left in the function after it ("idle"), and its
 * journal binding once as [int -1][int length][JSON, UTF-8]. A batch is delivered as idle
 * when the last key added to it was.
 * A burst of keys becomes one mailbox action, so many runs that finish together cost one round
 * trip to the Python worker. Compiled with DrainingKeyedProcessOperator.java (draining.py).
 */
package io.actionjournal.flink;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.util.function.BiConsumerWithException;
import org.apache.flink.util.function.ThrowingConsumer;

final class RunWakeups implements AutoCloseable {
    private static final int MAX_KEY_BYTES = 16 << 20;
    private static final int BINDING = -1; // in place of a key's length: the binding follows
    private static final int IDLE = -2; // before a key's length: no run is left after it

    private final ServerSocket server;
    private final byte[] token; // hex of 16 random bytes, ASCII
    private final MailboxExecutor mailbox;
    private final BiConsumerWithException<List<byte[]>, Boolean, Exception> deliver;
    private final ThrowingConsumer<String, Exception> bind;
    private final ConcurrentLinkedQueue<byte[]> keys = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final AtomicBoolean idle = new AtomicBoolean(); // the last key added was idle
    private final List<Socket> connections = new CopyOnWriteArrayList<>();

    /** Listens on the loopback interface; {@code deliver} and {@code bind} run on the task thread. */
    RunWakeups(
            MailboxExecutor mailbox,
            BiConsumerWithException<List<byte[]>, Boolean, Exception> deliver,
            ThrowingConsumer<String, Exception> bind)
            throws IOException {
        this.mailbox = mailbox;
        this.deliver = deliver;
        this.bind = bind;
        byte[] random = new byte[16];
        new SecureRandom().nextBytes(random);
        StringBuilder hex = new StringBuilder();
        for (byte b : random) {
            hex.append(String.format("%02x", b));
        }
        token = hex.toString().getBytes(StandardCharsets.US_ASCII);
        server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        daemon(this::accept, "actionjournal-run-wakeups");
    }

    /** "port token": where the Python function connects and what it sends first (hex). */
    String address() {
        return server.getLocalPort() + " " + new String(token, StandardCharsets.US_ASCII);
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket socket = server.accept();
                connections.add(socket);
                daemon(() -> read(socket), "actionjournal-run-wakeups-reader");
            } catch (IOException closed) {
                return;
            }
        }
    }

    private void read(Socket socket) {
        try (DataInputStream in =
                new DataInputStream(new BufferedInputStream(socket.getInputStream()))) {
            byte[] hello = new byte[token.length];
            in.readFully(hello);
            if (!MessageDigest.isEqual(hello, token)) {
                return; // not the agent's Python function
            }
            while (true) {
                int length = in.readInt();
                boolean last = length == IDLE;
                if (last) {
                    length = in.readInt();
                }
                if (length == BINDING) {
                    byte[] json = new byte[in.readInt()];
                    in.readFully(json);
                    String binding = new String(json, StandardCharsets.UTF_8);
                    mailbox.execute(() -> bind.accept(binding), "actionjournal: keep the binding");
                    continue;
                }
                if (length < 0 || length > MAX_KEY_BYTES) {
                    return; // not our protocol: the key's timer still finds its run
                }
                byte[] key = new byte[length];
                in.readFully(key);
                keys.add(key);
                idle.set(last);
                if (scheduled.compareAndSet(false, true)) {
                    mailbox.execute(this::drain, "actionjournal: emit finished runs");
                }
            }
        } catch (IOException | RuntimeException ended) {
            // The Python function closed its end, or the task's mailbox is closed.
        } finally {
            connections.remove(socket);
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
    }

    private void drain() throws Exception {
        scheduled.set(false); // keys added from now on schedule another action
        List<byte[]> batch = new ArrayList<>();
        for (byte[] key = keys.poll(); key != null; key = keys.poll()) {
            batch.add(key);
        }
        if (!batch.isEmpty()) {
            deliver.accept(batch, idle.get());
        }
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket socket : connections) {
            socket.close();
        }
    }

    private static void daemon(Runnable body, String name) {
        Thread thread = new Thread(body, name);
        thread.setDaemon(true);
        thread.start();
    }
}
