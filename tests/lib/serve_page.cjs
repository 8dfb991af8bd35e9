// Drives headless Chromium through the DevTools protocol (Node's WebSocket): loads the chat page
// of `edgelm serve`, sets the system prompt and temperature, types a message, presses Send, waits
// for the reply to stream in (watching the text grow while the stream is open), checks the
// reply's "first token ... tok/s" line and that the page fetched nothing but the server, and
// saves a screenshot. With STOP_URL (a server whose replies run for thousands of tokens): sends a
// message there, presses Stop once text streams in, and checks the reply stops ("stopped" in its
// line, the text no longer growing) and the server's slot is free again.
// usage: node --experimental-websocket serve_page.cjs WS_URL PAGE_URL PNG [STOP_URL]
const fs = require("fs");
const [wsUrl, pageUrl, png, stopUrl] = process.argv.slice(2);
let id = 0;
const pending = new Map(), requests = [];
const ws = new WebSocket(wsUrl);
function send(method, params = {}, sessionId) {
  return new Promise((resolve, reject) => {
    const msg = {id: ++id, method, params};
    if (sessionId) msg.sessionId = sessionId;
    pending.set(msg.id, {resolve, reject});
    ws.send(JSON.stringify(msg));
  });
}
ws.onmessage = ev => {
  const m = JSON.parse(ev.data);
  if (m.id && pending.has(m.id)) {
    const p = pending.get(m.id);
    pending.delete(m.id);
    m.error ? p.reject(new Error(JSON.stringify(m.error))) : p.resolve(m.result);
  } else if (m.method === "Network.requestWillBeSent") requests.push(m.params.request.url);
};
const sleep = ms => new Promise(r => setTimeout(r, ms));
function fail(msg) { console.error("FAIL: " + msg); process.exit(1); }

ws.onopen = async () => {
  try {
    const {targetId} = await send("Target.createTarget", {url: "about:blank"});
    const {sessionId} = await send("Target.attachToTarget", {targetId, flatten: true});
    const s = (method, params) => send(method, params, sessionId);
    await s("Network.enable");
    await s("Page.enable");
    await s("Emulation.setDeviceMetricsOverride", {width: 900, height: 640, deviceScaleFactor: 1, mobile: false});
    await s("Page.navigate", {url: pageUrl});
    const evaluate = async expr => (await s("Runtime.evaluate", {expression: expr, returnByValue: true, awaitPromise: true})).result.value;
    for (let i = 0; i < 100 && !(await evaluate("!!document.getElementById('send')")); i++) await sleep(50);
    await evaluate(`document.getElementById('system').value = 'You tell stories.';
                    document.getElementById('temp').value = '0';
                    document.getElementById('input').value = 'Once upon a time';
                    document.getElementById('send').click(); true`);
    // the stream: the reply's text grows over several observations before the stats line appears
    const lengths = new Set();
    let stats = "";
    for (let i = 0; i < 400 && !stats; i++) {
      const st = await evaluate(`(() => { const a = document.querySelector('.assistant');
          return a ? [a.querySelector('.text').textContent.length, a.querySelector('.stats').textContent,
                      document.getElementById('stop').disabled] : null; })()`);
      if (st) { lengths.add(st[0]); stats = st[1]; }
      await sleep(10);
    }
    const reply = await evaluate("document.querySelector('.assistant .text').textContent");
    if (!reply || reply.length < 5) fail("no reply text: '" + reply + "'");
    if (!/^first token \d+ ms · \d+ tokens · [\d.]+ tok\/s/.test(stats)) fail("stats line: '" + stats + "'");
    const outside = requests.filter(u => !u.startsWith(pageUrl.replace(/\/$/, "")));
    if (outside.length) fail("the page fetched " + outside.join(", "));
    const shot = await s("Page.captureScreenshot", {format: "png"});
    fs.writeFileSync(png, Buffer.from(shot.data, "base64"));
    console.log(`reply '${reply.slice(0, 60)}...', ${lengths.size} lengths seen while streaming; ${stats}`);
    if (stopUrl) {
      await s("Page.navigate", {url: stopUrl});
      // the first page's own Send button stays until the new document replaces it: clicking that
      // one (a slow navigation on a busy machine) sent nothing to the second server
      const ready = `location.href === ${JSON.stringify(stopUrl)} && document.readyState === 'complete' &&
                     !!document.getElementById('send')`;
      for (let i = 0; i < 100 && !(await evaluate(ready)); i++) await sleep(50);
      await evaluate(`document.getElementById('input').value = 'Once upon a time';
                      document.getElementById('send').click(); true`);
      let len = 0;
      for (let i = 0; i < 1000 && !len; i++) {
        len = await evaluate("(document.querySelector('.assistant .text') || {textContent: ''}).textContent.length");
        await sleep(10);
      }
      if (!len) fail("no text before Stop");
      await evaluate("document.getElementById('stop').click(); true");
      let line = "";
      for (let i = 0; i < 500 && !line; i++) {
        line = await evaluate("document.querySelector('.assistant .stats').textContent");
        await sleep(10);
      }
      if (!/stopped/.test(line)) fail("after Stop the reply line says '" + line + "'");
      const stopped = await evaluate("document.querySelector('.assistant .text').textContent.length");
      let busy = 1;
      for (let i = 0; i < 100 && busy; i++) {
        busy = await evaluate(`fetch('/health').then(r => r.json()).then(j => j.slots_busy)`);
        if (busy) await sleep(20);
      }
      await sleep(300);
      const later = await evaluate("document.querySelector('.assistant .text').textContent.length");
      if (later !== stopped) fail(`the reply grew after Stop: ${stopped} -> ${later}`);
      if (busy) fail("the slot is still busy 2 s after Stop");
      console.log(`stopped after ${stopped} characters; ${line}`);
    }
    process.exit(0);
  } catch (e) { fail(e.stack || String(e)); }
};
ws.onerror = e => fail("websocket: " + (e.message || e));
setTimeout(() => fail("timed out"), 60000);
