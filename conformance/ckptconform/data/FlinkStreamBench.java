/*
 * The Flink peer of `ckptconform bench --peer flink` (ckptconform.bench.peer): Apache Flink
 * 2.3.0's own FsCheckpointStreamFactory, timed inside the JVM.
 *
 * Compiled at first use against the jars of the apache-flink-libraries wheel and run as
 *     java -cp <flink jars>:<classes> FlinkStreamBench
 * It reads one command per line on stdin and answers each with one JSON object on one line of
 * stdout (System.out is pointed at stderr, so nothing Flink logs can mix with the answers):
 *
 *   open THRESHOLD BUFFER DIR    a factory: new FsCheckpointStreamFactory(local fs, DIR/chk-1,
 *                                DIR/shared, THRESHOLD, BUFFER), its directories created
 *   write SIZE COUNT CHUNK       COUNT states of SIZE bytes in CHUNK-byte writes, each through
 *                                createCheckpointStateOutputStream(EXCLUSIVE) ... closeAndGetHandle();
 *                                the seconds of the states' writes and closes, summed (the
 *                                handle's discardState() is not timed)
 *   raw SIZE COUNT CHUNK         the same bytes through a plain FileOutputStream, then
 *                                getFD().sync() and close: the JVM's own fsync-ed write
 *   inline SIZE WRITE COUNT      COUNT states of SIZE bytes in WRITE-byte writes (below the
 *                                threshold: inline ByteStreamStateHandles); the seconds of all
 *   warmup SECONDS               inline states and 1 MiB file-backed states for SECONDS, untimed
 *   probe                        one file-backed and one inline state through a factory on a
 *                                LocalFileSystem that counts its streams' flush/sync/close calls
 *   quit
 *
 * The first line is {"ready": true, "flink": ..., "java": ...}; an answer with "error" is a
 * failed command (the driver keeps reading). The bytes written are the bench's pattern:
 * 0, 1, ..., 255 repeated, as the Python side writes them.
 */

import java.io.BufferedReader;
import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.core.fs.FSDataOutputStream;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;
import org.apache.flink.core.fs.local.LocalFileSystem;
import org.apache.flink.runtime.state.CheckpointStateOutputStream;
import org.apache.flink.runtime.state.CheckpointedStateScope;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.FsCheckpointStreamFactory;
import org.apache.flink.runtime.util.EnvironmentInformation;

public final class FlinkStreamBench {

    private static PrintStream answers;
    private static FsCheckpointStreamFactory factory;
    private static File directory;
    private static int threshold = 1024;
    private static int buffer = 4096;
    private static final AtomicLong SINK = new AtomicLong();

    public static void main(String[] args) throws Exception {
        answers = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        answer("{\"ready\": true, \"flink\": " + quote(EnvironmentInformation.getVersion())
                + ", \"java\": " + quote(System.getProperty("java.version"))
                + ", \"vm\": " + quote(System.getProperty("java.vm.name")) + "}");
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] words = line.split("\\s+", 4);
            try {
                switch (words[0]) {
                    case "open":
                        answer(open(Integer.parseInt(words[1]), Integer.parseInt(words[2]),
                                line.split("\\s+", 4)[3]));
                        break;
                    case "write":
                        answer(seconds(write(size(words[1]), size(words[2]), size(words[3]))));
                        break;
                    case "raw":
                        answer(seconds(raw(size(words[1]), size(words[2]), size(words[3]))));
                        break;
                    case "inline":
                        answer(seconds(inline(size(words[1]), size(words[2]), size(words[3]))));
                        break;
                    case "warmup":
                        answer(seconds(warmup(Double.parseDouble(words[1]))));
                        break;
                    case "probe":
                        answer(probe());
                        break;
                    case "quit":
                        answer("{\"bye\": true, \"sink\": " + SINK.get() + "}");
                        return;
                    default:
                        answer("{\"error\": " + quote("unknown command " + words[0]) + "}");
                }
            } catch (Throwable t) {
                answer("{\"error\": " + quote(t.getClass().getSimpleName() + ": " + t.getMessage())
                        + "}");
            }
        }
    }

    // ------------------------------------------------------------------ commands

    private static String open(int fileThreshold, int writeBuffer, String dir) throws IOException {
        directory = new File(dir).getAbsoluteFile();
        threshold = fileThreshold;
        buffer = writeBuffer;
        factory = newFactory(FileSystem.getLocalFileSystem(), directory);
        return "{\"ok\": true, \"threshold\": " + threshold + ", \"buffer\": " + buffer + "}";
    }

    private static FsCheckpointStreamFactory newFactory(FileSystem fs, File dir)
            throws IOException {
        Path root = Path.fromLocalFile(dir);
        Path exclusive = new Path(root, "chk-1");
        Path shared = new Path(root, "shared");
        // what FsCheckpointStorageAccess.initializeLocationForCheckpoint does before any stream
        fs.mkdirs(exclusive);
        fs.mkdirs(shared);
        return new FsCheckpointStreamFactory(fs, exclusive, shared, threshold, buffer);
    }

    private static FsCheckpointStreamFactory factory() {
        if (factory == null) {
            throw new IllegalStateException("no factory: send open first");
        }
        return factory;
    }

    private static long write(long size, long count, long chunkSize) throws IOException {
        byte[] chunk = pattern((int) chunkSize);
        FsCheckpointStreamFactory streams = factory();
        long total = 0;
        for (long i = 0; i < count; i++) {
            long started = System.nanoTime();
            CheckpointStateOutputStream stream =
                    streams.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE);
            StreamStateHandle handle;
            try {
                writeAll(stream, chunk, size);
                handle = stream.closeAndGetHandle();
            } catch (IOException | RuntimeException e) {
                stream.close();
                throw e;
            }
            total += System.nanoTime() - started;
            if (!(handle instanceof FileStateHandle) || handle.getStateSize() != size) {
                throw new IOException("expected a file-backed handle of " + size + " bytes, got "
                        + handle);
            }
            discard(handle);
        }
        return total;
    }

    private static long raw(long size, long count, long chunkSize) throws IOException {
        byte[] chunk = pattern((int) chunkSize);
        File dir = new File(directory == null ? new File(".") : directory, "raw");
        if (!dir.isDirectory() && !dir.mkdirs()) {
            throw new IOException("cannot create " + dir);
        }
        long total = 0;
        for (long i = 0; i < count; i++) {
            File file = new File(dir, UUID.randomUUID().toString());
            long started = System.nanoTime();
            try (FileOutputStream out = new FileOutputStream(file)) {
                long left = size;
                while (left > 0) {
                    int n = (int) Math.min(left, chunk.length);
                    out.write(chunk, 0, n);
                    left -= n;
                }
                out.getFD().sync();
            }
            total += System.nanoTime() - started;
            if (!file.delete()) {
                throw new IOException("cannot delete " + file);
            }
        }
        return total;
    }

    private static long inline(long size, long writeSize, long count) throws IOException {
        byte[] data = pattern((int) size);
        int piece = (int) writeSize;
        FsCheckpointStreamFactory streams = factory();
        long sum = 0;
        long started = System.nanoTime();
        for (long i = 0; i < count; i++) {
            CheckpointStateOutputStream stream =
                    streams.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE);
            for (int off = 0; off < data.length; off += piece) {
                stream.write(data, off, Math.min(piece, data.length - off));
            }
            StreamStateHandle handle = stream.closeAndGetHandle();
            sum += handle.getStateSize();
        }
        long elapsed = System.nanoTime() - started;
        if (sum != size * count) {
            throw new IOException("inline states came back with " + sum + " bytes, expected "
                    + size * count);
        }
        SINK.addAndGet(sum);
        return elapsed;
    }

    private static long warmup(double seconds) throws IOException {
        long until = System.nanoTime() + (long) (seconds * 1e9);
        long started = System.nanoTime();
        while (System.nanoTime() < until) {
            inline(1000, 100, 2000);
            write(1 << 20, 1, 1 << 20);
        }
        return System.nanoTime() - started;
    }

    private static String probe() throws IOException {
        CountingLocalFileSystem fs = new CountingLocalFileSystem();
        File dir = new File(directory == null ? new File(".") : directory, "probe");
        FsCheckpointStreamFactory counted = newFactory(fs, dir);
        byte[] chunk = pattern(1 << 20);
        CheckpointStateOutputStream file =
                counted.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE);
        writeAll(file, chunk, chunk.length);
        StreamStateHandle fileHandle = file.closeAndGetHandle();
        String fileCounts = fs.counts();
        discard(fileHandle);
        fs.reset();
        byte[] small = pattern(Math.max(1, Math.min(threshold, 1000)));
        CheckpointStateOutputStream inline =
                counted.createCheckpointStateOutputStream(CheckpointedStateScope.EXCLUSIVE);
        inline.write(small, 0, small.length);
        StreamStateHandle inlineHandle = inline.closeAndGetHandle();
        String inlineCounts = fs.counts();
        return "{\"file_backed\": " + fileCounts + ", \"file_backed_handle\": "
                + quote(fileHandle.getClass().getSimpleName()) + ", \"file_backed_bytes\": "
                + chunk.length + ", \"inline\": " + inlineCounts + ", \"inline_handle\": "
                + quote(inlineHandle.getClass().getSimpleName()) + ", \"inline_bytes\": "
                + small.length + ", \"stream\": "
                + quote(file.getClass().getName()) + ", \"local_stream\": "
                + quote(fs.streamClass) + "}";
    }

    // ------------------------------------------------------------------ helpers

    private static void writeAll(CheckpointStateOutputStream stream, byte[] chunk, long size)
            throws IOException {
        long left = size;
        while (left > 0) {
            int n = (int) Math.min(left, chunk.length);
            stream.write(chunk, 0, n);
            left -= n;
        }
    }

    private static void discard(StreamStateHandle handle) throws IOException {
        try {
            handle.discardState();
        } catch (Exception e) {
            throw new IOException("discardState failed: " + e, e);
        }
    }

    private static byte[] pattern(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("a write must be at least 1 byte, got " + size);
        }
        byte[] bytes = new byte[size];
        for (int i = 0; i < size; i++) {
            bytes[i] = (byte) i;
        }
        return bytes;
    }

    private static long size(String word) {
        long value = Long.parseLong(word);
        if (value < 0) {
            throw new IllegalArgumentException("negative number " + word);
        }
        return value;
    }

    private static String seconds(long nanos) {
        return "{\"seconds\": " + (nanos / 1e9) + "}";
    }

    private static void answer(String json) {
        answers.println(json);
        answers.flush();
    }

    private static String quote(String text) {
        if (text == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    /** Flink's LocalFileSystem whose output streams count flush, sync and close calls. */
    static final class CountingLocalFileSystem extends LocalFileSystem {
        final AtomicLong created = new AtomicLong();
        final AtomicLong flushes = new AtomicLong();
        final AtomicLong syncs = new AtomicLong();
        final AtomicLong closes = new AtomicLong();
        volatile String streamClass = "";

        @Override
        public FSDataOutputStream create(Path path, WriteMode mode) throws IOException {
            FSDataOutputStream inner = super.create(path, mode);
            streamClass = inner.getClass().getName();
            created.incrementAndGet();
            return new FSDataOutputStream() {
                @Override
                public void write(int b) throws IOException {
                    inner.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) throws IOException {
                    inner.write(b, off, len);
                }

                @Override
                public long getPos() throws IOException {
                    return inner.getPos();
                }

                @Override
                public void flush() throws IOException {
                    flushes.incrementAndGet();
                    inner.flush();
                }

                @Override
                public void sync() throws IOException {
                    syncs.incrementAndGet();
                    inner.sync();
                }

                @Override
                public void close() throws IOException {
                    closes.incrementAndGet();
                    inner.close();
                }
            };
        }

        String counts() {
            return "{\"files\": " + created.get() + ", \"flush\": " + flushes.get()
                    + ", \"sync\": " + syncs.get() + ", \"close\": " + closes.get() + "}";
        }

        void reset() {
            created.set(0);
            flushes.set(0);
            syncs.set(0);
            closes.set(0);
        }
    }
}
