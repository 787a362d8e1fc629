/*
 * One real Apache Flink 2.3.0 streaming job on a local MiniCluster, driven step by step, for
 * scripts/flink_trees.py (which compiles this file against Flink's jars and packs the trees).
 *
 *     java -cp <flink jars>:<classes> FlinkTreesJob CONFIG TOPOLOGY CONTROL ACTION...
 *
 * CONFIG is a properties file of Flink options (Configuration.fromMap), TOPOLOGY one of
 *   keyed         generator (rate-limited) -> keyBy(i % KEYS) -> counter with a ValueState<Long>
 *                 and a ValueState<String> payload of PAYLOAD bytes per key -> discarding sink
 *   backpressure  generator (fast) -> rebalance -> slow map (sleeps) -> keyBy -> counter -> sink:
 *                 the slow map backs the network up, so unaligned checkpoints hold channel state
 * CONTROL is a scratch directory outside the checkpoint root: while CONTROL/stall exists the
 * counter's subtask 0 blocks in snapshotState, so a checkpoint stays in flight (subtask 1 still
 * writes its state for it). The ACTIONs run in order:
 *   checkpoints N        wait until N more checkpoints of this job have a _metadata
 *   savepoint canonical|native
 *   stall                make CONTROL/stall and wait until a checkpoint directory without
 *                        _metadata has been there for 2 s (the checkpoint is stuck in flight)
 *   cancel               cancel the job and wait for it to end
 *   halt                 end the JVM at once (a crash: nothing is cleaned up)
 * Each result is one line "FLINKTREES {json}" on stdout: the job id, every checkpoint seen
 * completed, each savepoint's path, the in-flight checkpoint, the final status.
 */

import java.io.FileInputStream;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

public final class FlinkTreesJob {

    private static final long TIMEOUT_MS = 120_000;

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            throw new IllegalArgumentException("usage: CONFIG TOPOLOGY CONTROL ACTION...");
        }
        Map<String, String> options = new HashMap<>();
        Properties properties = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            properties.load(in);
        }
        for (String key : properties.stringPropertyNames()) {
            options.put(key, properties.getProperty(key));
        }
        Configuration config = Configuration.fromMap(options);
        Path control = Paths.get(args[2]);
        Files.createDirectories(control);
        Files.deleteIfExists(control.resolve("stall"));
        int keys = Integer.parseInt(options.getOrDefault("flinktrees.keys", "8"));
        int payload = Integer.parseInt(options.getOrDefault("flinktrees.payload-bytes", "64"));
        double rate = Double.parseDouble(options.getOrDefault("flinktrees.rate", "50"));

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        DataGeneratorSource<Long> source =
                new DataGeneratorSource<>(
                        index -> index, Long.MAX_VALUE, RateLimiterStrategy.perSecond(rate), Types.LONG);
        DataStream<Long> numbers =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers");
        if (args[1].equals("backpressure")) {
            long sleepMs = Long.parseLong(options.getOrDefault("flinktrees.sleep-ms", "2"));
            numbers = numbers.rebalance().map(new Slow(sleepMs)).name("slow").uid("slow");
        } else if (!args[1].equals("keyed")) {
            throw new IllegalArgumentException("unknown topology " + args[1]);
        }
        numbers.keyBy(n -> n % keys)
                .map(new Counter(control.resolve("stall").toString(), payload))
                .name("counter")
                .uid("counter")
                .sinkTo(new DiscardingSink<>())
                .name("sink")
                .uid("sink");

        JobClient client = env.executeAsync("flink-trees-" + args[1]);
        String jobId = client.getJobID().toString();
        emit("{\"event\":\"job\",\"job_id\":\"" + jobId + "\"}");
        Path jobDir = Paths.get(new java.net.URI(options.get("execution.checkpointing.dir")))
                .resolve(jobId);
        TreeSet<Long> completed = new TreeSet<>();
        for (int i = 3; i < args.length; i++) {
            switch (args[i]) {
                case "checkpoints":
                    int wanted = Integer.parseInt(args[++i]);
                    int before = completed.size();
                    long deadline = System.currentTimeMillis() + TIMEOUT_MS;
                    while (completed.size() < before + wanted) {
                        completed.addAll(scan(jobDir, true));
                        check(deadline, "checkpoints");
                        Thread.sleep(20);
                    }
                    emit("{\"event\":\"checkpoints\",\"completed\":" + completed + "}");
                    break;
                case "savepoint":
                    String format = args[++i];
                    SavepointFormatType type =
                            format.equals("native") ? SavepointFormatType.NATIVE : SavepointFormatType.CANONICAL;
                    String path = client.triggerSavepoint(null, type).get();
                    emit("{\"event\":\"savepoint\",\"format\":\"" + format + "\",\"path\":\"" + path + "\"}");
                    break;
                case "stall":
                    Files.createFile(control.resolve("stall"));
                    long stuckSince = -1;
                    long stuck = -1;
                    long until = System.currentTimeMillis() + TIMEOUT_MS;
                    while (true) {
                        completed.addAll(scan(jobDir, true));
                        TreeSet<Long> open = scan(jobDir, false);
                        open.removeAll(completed);
                        if (!open.isEmpty() && open.last() == stuck) {
                            if (System.currentTimeMillis() - stuckSince >= 2000) {
                                break;
                            }
                        } else {
                            stuck = open.isEmpty() ? -1 : open.last();
                            stuckSince = System.currentTimeMillis();
                        }
                        check(until, "stall");
                        Thread.sleep(20);
                    }
                    emit("{\"event\":\"in_flight\",\"checkpoint_id\":" + stuck + ",\"completed\":" + completed + "}");
                    break;
                case "cancel":
                    client.cancel().get();
                    JobStatus status = client.getJobStatus().get();
                    long end = System.currentTimeMillis() + TIMEOUT_MS;
                    while (!status.isGloballyTerminalState()) {
                        check(end, "cancel");
                        Thread.sleep(50);
                        try {
                            status = client.getJobStatus().get();
                        } catch (Exception gone) {
                            break; // the per-job MiniCluster is gone with the job
                        }
                    }
                    Files.deleteIfExists(control.resolve("stall"));
                    emit("{\"event\":\"cancelled\",\"status\":\"" + status + "\"}");
                    break;
                case "halt":
                    emit("{\"event\":\"halt\"}");
                    System.out.flush();
                    Runtime.getRuntime().halt(0);
                    break;
                default:
                    throw new IllegalArgumentException("unknown action " + args[i]);
            }
        }
        emit("{\"event\":\"done\"}");
        System.out.flush();
        System.exit(0);
    }

    private static void check(long deadline, String what) {
        if (System.currentTimeMillis() > deadline) {
            throw new IllegalStateException("timed out waiting for " + what);
        }
    }

    /** The ids of chk-N directories of the job: with a _metadata, or all of them. */
    private static TreeSet<Long> scan(Path jobDir, boolean withMetadata) throws Exception {
        TreeSet<Long> ids = new TreeSet<>();
        if (!Files.isDirectory(jobDir)) {
            return ids;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(jobDir, "chk-*")) {
            for (Path entry : entries) {
                if (!withMetadata || Files.exists(entry.resolve("_metadata"))) {
                    ids.add(Long.parseLong(entry.getFileName().toString().substring(4)));
                }
            }
        }
        return ids;
    }

    private static void emit(String json) {
        System.out.println("FLINKTREES " + json);
        System.out.flush();
    }

    /** Sleeps per record: the backpressure that fills the network buffers. */
    public static final class Slow extends RichMapFunction<Long, Long> {
        private final long sleepMs;

        Slow(long sleepMs) {
            this.sleepMs = sleepMs;
        }

        @Override
        public Long map(Long value) throws Exception {
            Thread.sleep(sleepMs);
            return value;
        }
    }

    /**
     * Counts per key and keeps a payload per key. While the stall file exists, subtask 0 blocks
     * in snapshotState, so its checkpoint stays in flight while subtask 1 writes its state.
     */
    public static final class Counter extends RichMapFunction<Long, Long> implements CheckpointedFunction {
        private final String stall;
        private final int payload;
        private transient ValueState<Long> count;
        private transient ValueState<String> text;

        Counter(String stall, int payload) {
            this.stall = stall;
            this.payload = payload;
        }

        @Override
        public void open(OpenContext context) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            text = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", Types.STRING));
        }

        @Override
        public Long map(Long value) throws Exception {
            Long seen = count.value();
            long next = seen == null ? 1 : seen + 1;
            count.update(next);
            StringBuilder builder = new StringBuilder(payload);
            String word = "key" + (value % 1000) + "-count" + next + ";";
            while (builder.length() < payload) {
                builder.append(word);
            }
            builder.setLength(payload);
            text.update(builder.toString());
            return next;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) throws Exception {
            boolean first = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0;
            while (first && Files.exists(Paths.get(stall))) {
                Thread.sleep(20);
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {}
    }
}
