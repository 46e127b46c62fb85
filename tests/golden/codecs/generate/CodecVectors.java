// Writes the golden codec vectors produced by the Java libraries Kafka's codecs wrap,
// used the way clients/.../compress/{Gzip,Snappy,Zstd}Compression.java use them.
//
//   python -c 'import sys; sys.path.insert(0, "."); from tests.golden.codec_input import golden_input; open("/tmp/golden-input.bin", "wb").write(golden_input())'
//   CP=/usr/share/java/snappy-java.jar:/usr/share/java/zstd-jni.jar
//   javac -cp $CP -d /tmp/golden-classes tests/golden/codecs/generate/CodecVectors.java
//   java -cp $CP:/tmp/golden-classes CodecVectors /tmp/golden-input.bin tests/golden/codecs
//
// Debian bookworm packages: libsnappy-java 1.1.8.3, libzstd-jni-java 1.5.2-5; JDK 17.
import com.github.luben.zstd.RecyclingBufferPool;
import com.github.luben.zstd.ZstdOutputStreamNoFinalizer;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.zip.GZIPOutputStream;
import org.xerial.snappy.SnappyOutputStream;

public class CodecVectors {
    interface Wrapper {
        OutputStream wrap(OutputStream out) throws IOException;
    }

    /** GZIPOutputStream with a deflate level, as Kafka's GzipOutputStream sets it. */
    static final class LeveledGzip extends GZIPOutputStream {
        LeveledGzip(OutputStream out, int level) throws IOException {
            super(out, 8 * 1024);
            def.setLevel(level);
        }
    }

    static void write(Path dir, String name, byte[] input, Wrapper wrapper) throws IOException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        try (OutputStream out = wrapper.wrap(sink)) {
            out.write(input);
        }
        byte[] bytes = sink.toByteArray();
        Files.write(dir.resolve(name), bytes);
        System.out.println(name + ": " + bytes.length + " bytes");
    }

    public static void main(String[] args) throws IOException {
        byte[] input = Files.readAllBytes(Paths.get(args[0]));
        Path dir = Paths.get(args[1]);
        write(dir, "gzip.jdk.bin", input,
            out -> new BufferedOutputStream(new LeveledGzip(out, -1), 16 * 1024));
        write(dir, "gzip-level1.jdk.bin", input,
            out -> new BufferedOutputStream(new LeveledGzip(out, 1), 16 * 1024));
        write(dir, "snappy-xerial.snappy-java.bin", input, SnappyOutputStream::new);
        write(dir, "zstd.zstd-jni.bin", input,
            out -> new BufferedOutputStream(
                new ZstdOutputStreamNoFinalizer(out, RecyclingBufferPool.INSTANCE, 3), 16 * 1024));
        System.out.println("java " + System.getProperty("java.version"));
    }
}
