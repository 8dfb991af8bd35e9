// Runs libedgelm_jni.so from a JVM: load the stories260K model, one chat turn streamed through the
// listener, a turn stopped by the listener after 3 pieces, and a bad path's exception.
// usage: java -Djava.library.path=DIR JniBridgeTest MODEL.gguf
import org.edgelm.EdgeLm;

public final class JniBridgeTest {
    static int failures = 0;

    static void check(boolean ok, String what) {
        if (!ok) {
            System.out.println("FAIL " + what);
            failures++;
        }
    }

    static final class Collect implements EdgeLm.Listener {
        final StringBuilder text = new StringBuilder();
        int pieces = 0, stopAfter;
        String error = "not called";

        Collect(int stopAfter) { this.stopAfter = stopAfter; }

        public boolean onToken(String piece, int id) {
            text.append(piece);
            return ++pieces < stopAfter;
        }

        public void onDone(String errorOrNull, float tokensPerSec) { error = errorOrNull; }
    }

    public static void main(String[] args) {
        try {
            EdgeLm.nativeLoad(args[0] + ".missing");
            check(false, "nativeLoad of a missing file threw nothing");
        } catch (IllegalStateException e) {
            check(e.getMessage().contains(".missing"), "error names the file: " + e.getMessage());
        }
        long model = EdgeLm.nativeLoad(args[0]);
        long ctx = EdgeLm.nativeNewChat(model, "You tell stories.");
        check(model != 0 && ctx != 0, "handles");
        Collect full = new Collect(Integer.MAX_VALUE);
        int st = EdgeLm.nativeChat(ctx, "Tell me a story.", full);
        check(st == 0 && full.error == null, "chat status " + st + ", error " + full.error);
        check(full.pieces > 0 && full.text.length() > 0, "reply streamed: " + full.pieces + " pieces");
        Collect stop = new Collect(3);
        st = EdgeLm.nativeChat(ctx, "And then?", stop);
        check(stop.pieces == 3, "listener stopped the reply after 3 pieces, got " + stop.pieces);
        EdgeLm.nativeFree(ctx, model);
        System.out.println("jni: " + full.pieces + " pieces, then " + stop.pieces + " (stopped); "
                           + failures + " failures");
        System.exit(failures == 0 ? 0 : 1);
    }
}
