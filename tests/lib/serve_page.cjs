// Drives headless Chromium through the DevTools protocol (Node's WebSocket) on the chat page of
// `edgelm serve`:
// - the page's Markdown renderer on a fixed text: headings, a fenced code block (its text exact,
//   its language a class), lists, inline code, bold, italic, an http link; a <script>, an
//   <img onerror> and a javascript: link stay text (no element made, nothing run); an unclosed
//   fence is a code block so far;
// - at PAGE_URL: sets the system prompt and temperature, sends a message, watches the reply grow
//   while the stream is open, checks its "first token ... tok/s" line, that it is rendered from
//   the whole streamed text, that the page fetched nothing but the server; saves a screenshot;
// - at STOP_URL (a server whose replies run for thousands of tokens): presses Stop once text
//   streams in; the reply stops ("stopped" in its line, the text no longer growing) and the
//   server's slot is free again;
// - at TOOLS_URL (Qwen3's template): invalid JSON in the Tools field shows an error and sends
//   nothing; a get_weather tool with tool_choice "required" comes back as cards (the name, the
//   arguments as JSON with a string city); results typed into them go back as the assistant's
//   tool_calls message and a tool message per call (read from the request's body), and a reply
//   follows;
// - at DOCS_URL (a server with --docs over an index holding a chunk of HTML and script): the
//   reply gets a documents panel whose entries are the server's citations for the question
//   ("[i] file:lines · heading"), closed until clicked, each opening its chunk's exact text; the
//   markup in a chunk stays text (no element made, nothing run). A server without --docs shows
//   no panel.
// usage: node --experimental-websocket serve_page.cjs WS_URL PAGE_URL PNG STOP_URL TOOLS_URL DOCS_URL
const fs = require("fs");
const [wsUrl, pageUrl, png, stopUrl, toolsUrl, docsUrl] = process.argv.slice(2);
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
  } else if (m.method === "Network.requestWillBeSent") requests.push({id: m.params.requestId, ...m.params.request});
};
const sleep = ms => new Promise(r => setTimeout(r, ms));
function fail(msg) { console.error("FAIL: " + msg); process.exit(1); }

const mdText = `# Title
Some **bold** and *italic* text with \`inline code\` and a [link](https://example.com/a?b=1).
A [bad link](javascript:alert(1)) and <script>window.pwned = 1</script> and <img src=x onerror="window.pwned = 2">.

- one
- two with \`code\`
* three

1. first
2. second

\`\`\`js
const s = "<b>not bold</b>";
if (a < b && c > d) {}
\`\`\`
after`;
const mdCode = 'const s = "<b>not bold</b>";\nif (a < b && c > d) {}';

ws.onopen = async () => {
  try {
    const {targetId} = await send("Target.createTarget", {url: "about:blank"});
    const {sessionId} = await send("Target.attachToTarget", {targetId, flatten: true});
    const s = (method, params) => send(method, params, sessionId);
    await s("Network.enable");
    await s("Page.enable");
    await s("Emulation.setDeviceMetricsOverride", {width: 900, height: 640, deviceScaleFactor: 1, mobile: false});
    const evaluate = async expr => (await s("Runtime.evaluate", {expression: expr, returnByValue: true, awaitPromise: true})).result.value;
    // the previous page's own elements stay until the new document replaces them: clicking those
    // (a slow navigation on a busy machine) sent nothing to the next server
    async function open(url) {
      await s("Page.navigate", {url});
      const ready = `location.href === ${JSON.stringify(url)} && document.readyState === 'complete' &&
                     !!document.getElementById('send')`;
      for (let i = 0; i < 100 && !(await evaluate(ready)); i++) await sleep(50);
    }
    async function until(expr, tries, what) {
      for (let i = 0; i < tries; i++) {
        const v = await evaluate(expr);
        if (v) return v;
        await sleep(10);
      }
      fail(what);
    }
    async function body(r) {   // the JSON a request sent
      const data = r.postData !== undefined ? r.postData : (await s("Network.getRequestPostData", {requestId: r.id})).postData;
      return JSON.parse(data);
    }
    const completions = () => requests.filter(r => r.url.endsWith("/v1/chat/completions"));

    await open(pageUrl);
    const md = await evaluate(`(async () => {
      const d = document.createElement('div');
      d.className = 'text';
      d.append(markdown(${JSON.stringify(mdText)}));
      document.body.appendChild(d);
      await new Promise(r => setTimeout(r, 200));   // time for an onerror to fire, were there an img
      const q = sel => [...d.querySelectorAll(sel)];
      const open = document.createElement('div');
      open.append(markdown('text\\n\`\`\`py\\nprint(1)'));
      const r = {pre: q('pre').length, code: q('pre > code').map(c => [c.className, c.textContent]),
                 li: q('li').length, ul: q('ul > li').length, ol: q('ol > li').length,
                 inline: q(':not(pre) > code').map(c => c.textContent), strong: q('strong').map(e => e.textContent),
                 em: q('em').map(e => e.textContent), h1: q('h1').map(e => e.textContent),
                 links: q('a').map(a => [a.getAttribute('href'), a.textContent]),
                 bad: q('script, img, [onerror]').length, pwned: window.pwned === undefined ? null : window.pwned,
                 text: d.textContent, last: d.lastChild.tagName + ' ' + d.lastChild.textContent,
                 open: [...open.querySelectorAll('pre > code')].map(c => [c.className, c.textContent])};
      d.remove();
      return r;
    })()`);
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    if (md.pre !== 1 || !same(md.code, [["language-js", mdCode]])) fail("code block: " + JSON.stringify(md.code));
    if (md.li !== 5 || md.ul !== 3 || md.ol !== 2) fail(`list items: ${md.li} (${md.ul} + ${md.ol})`);
    if (!same(md.inline, ["inline code", "code"])) fail("inline code: " + JSON.stringify(md.inline));
    if (!same(md.strong, ["bold"]) || !same(md.em, ["italic"]) || !same(md.h1, ["Title"]))
      fail("bold/italic/heading: " + JSON.stringify([md.strong, md.em, md.h1]));
    if (!same(md.links, [["https://example.com/a?b=1", "link"]])) fail("links: " + JSON.stringify(md.links));
    if (md.bad || md.pwned !== null) fail(`injection: ${md.bad} elements, window.pwned ${md.pwned}`);
    if (!md.text.includes("<script>window.pwned = 1</script>") || !md.text.includes("[bad link](javascript:alert(1))"))
      fail("the injection is not shown as text: " + md.text);
    if (md.last !== "P after") fail("after the code block: " + md.last);
    if (!same(md.open, [["language-py", "print(1)"]])) fail("unclosed fence: " + JSON.stringify(md.open));
    console.log(`markdown: ${md.pre} code block, ${md.li} list items, ${md.links.length} link, no injected element`);

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
    // what shows is the Markdown of the whole stream, the raw text kept beside it
    const rendered = await evaluate(`(() => { const t = document.querySelector('.assistant .text'), d = document.createElement('div');
        d.append(markdown(t.dataset.raw || ''));
        return [t.dataset.raw.length, t.querySelectorAll('p').length, d.innerHTML === t.innerHTML]; })()`);
    if (!(rendered[0] >= reply.length && rendered[1] >= 1 && rendered[2])) fail("rendered reply: " + JSON.stringify(rendered));
    if (await evaluate("document.querySelectorAll('.sources').length")) fail("a documents panel without --docs");
    const outside = requests.filter(r => !r.url.startsWith(pageUrl.replace(/\/$/, "")));
    if (outside.length) fail("the page fetched " + outside.map(r => r.url).join(", "));
    const shot = await s("Page.captureScreenshot", {format: "png"});
    fs.writeFileSync(png, Buffer.from(shot.data, "base64"));
    console.log(`reply '${reply.slice(0, 60)}...', ${lengths.size} lengths seen while streaming; ${stats}`);

    await open(stopUrl);
    await evaluate(`document.getElementById('input').value = 'Once upon a time';
                    document.getElementById('send').click(); true`);
    await until("(document.querySelector('.assistant .text') || {textContent: ''}).textContent.length", 1000, "no text before Stop");
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

    await open(toolsUrl);
    const tools = [{type: "function", function: {name: "get_weather", description: "The weather in a city",
      parameters: {type: "object", properties: {city: {type: "string", minLength: 1, maxLength: 12}}, required: ["city"]}}}];
    const before = completions().length;
    const refused = await evaluate(`(async () => {
      document.getElementById('tools').value = '[{"type": "function",';
      document.getElementById('temp').value = '0';
      document.getElementById('input').value = 'What is the weather in Paris?';
      document.getElementById('send').click();
      await new Promise(r => setTimeout(r, 300));
      return [document.getElementById('tools-error').textContent, document.getElementById('tools-box').open,
              document.querySelectorAll('.msg').length, document.getElementById('input').value];
    })()`);
    if (!refused[0] || !refused[1] || refused[2] || !refused[3] || completions().length !== before)
      fail("invalid tools: " + JSON.stringify(refused) + `, ${completions().length - before} requests`);
    await evaluate(`document.getElementById('tools').value = ${JSON.stringify(JSON.stringify(tools, null, 2))};
                    document.getElementById('tool-choice').value = 'required';
                    document.getElementById('send').click(); true`);
    await until("(document.querySelector('.assistant .stats') || {textContent: ''}).textContent", 1000, "no reply to the tools request");
    const cards = await evaluate(`[document.getElementById('tools-error').textContent,
        ...[...document.querySelectorAll('.assistant .call')].map(c => [c.querySelector('.name').textContent, c.querySelector('.args').textContent])]`);
    if (cards.shift() !== "") fail("tools error after valid JSON");
    if (!cards.length) fail("no tool call card: " + await evaluate("document.querySelector('.assistant').textContent"));
    for (const [name, args] of cards) {
      let a = null;
      try { a = JSON.parse(args); } catch (e) {}
      if (name !== "get_weather" || !a || typeof a.city !== "string") fail("tool call card: " + JSON.stringify([name, args]));
    }
    const first = await body(completions().at(-1));
    if (first.tool_choice !== "required" || JSON.stringify(first.tools) !== JSON.stringify(tools)) fail("tools request: " + JSON.stringify(first));
    await evaluate(`document.querySelectorAll('.call textarea').forEach(t => t.value = 'Sunny, 21 C');
                    document.getElementById('tool-choice').value = 'none';
                    document.querySelector('.calls button').click(); true`);
    await until("(document.querySelectorAll('.assistant .stats')[1] || {textContent: ''}).textContent", 1000, "no reply to the tool results");
    const second = await body(completions().at(-1));
    const m = second.messages, calls = m[1] && m[1].tool_calls;
    if (m.length !== 2 + cards.length || m[0].role !== "user" || m[1].role !== "assistant" || !calls ||
        calls.length !== cards.length || second.tool_choice !== "none" ||
        !calls.every((c, i) => c.id && c.function.name === "get_weather" && JSON.parse(c.function.arguments).city !== undefined &&
                               m[2 + i].role === "tool" && m[2 + i].tool_call_id === c.id && m[2 + i].content === "Sunny, 21 C"))
      fail("tool results request: " + JSON.stringify(m));
    const answer = await evaluate(`[document.querySelectorAll('.assistant')[1].querySelector('.text').textContent,
                                    document.querySelectorAll('.calls button').length, document.querySelectorAll('.msg .error').length]`);
    if (!answer[0] || answer[1] || answer[2]) fail("after the tool results: " + JSON.stringify(answer));
    console.log(`tools: ${cards.length} get_weather card(s) (${cards[0][1].replace(/\s+/g, " ")}); results sent, reply '${answer[0].slice(0, 40)}...'`);

    await open(docsUrl);
    const question = "What does the zorblat gadget manual say?";
    await evaluate(`document.getElementById('temp').value = '0';
                    document.getElementById('input').value = ${JSON.stringify(question)};
                    document.getElementById('send').click(); true`);
    await until("(document.querySelector('.assistant .stats') || {textContent: ''}).textContent", 1000, "no reply from the --docs server");
    const want = await evaluate(`fetch('/v1/chat/completions', {method: 'POST', headers: {'Content-Type': 'application/json'},
        body: JSON.stringify({messages: [{role: 'user', content: ${JSON.stringify(question)}}], max_tokens: 1})})
        .then(r => r.json()).then(j => j.edgelm.citations)`);
    const panel = await evaluate(`(async () => {
      const items = [...document.querySelectorAll('.assistant .sources details.source')];
      const chunk = d => d.querySelector('pre.chunk');
      const before = items.map(d => [d.open, chunk(d).checkVisibility()]);
      items.forEach(d => d.querySelector('summary').click());
      await new Promise(r => setTimeout(r, 200));   // time for an onerror to fire, were there an img
      return {title: document.querySelector('.assistant .sources .title').textContent, before,
              after: items.map(d => [d.open, chunk(d).checkVisibility()]),
              summaries: items.map(d => d.querySelector('summary').textContent), texts: items.map(d => chunk(d).textContent),
              bad: document.querySelectorAll('.sources img, .sources script, .sources [onerror]').length,
              pwned: window.pwned === undefined ? null : window.pwned};
    })()`);
    const label = c => `[${c.index}] ${c.file.split("/").pop()}:${c.line_start === c.line_end ? c.line_start : c.line_start + "-" + c.line_end}` +
      (c.heading ? " · " + c.heading : "");
    if (!Array.isArray(want) || want.length < 2 || !want[0].text.includes("<img src=x onerror="))
      fail("the server's citations: " + JSON.stringify(want));
    if (panel.title !== "Sources" || !same(panel.summaries, want.map(label)) || !same(panel.texts, want.map(c => c.text)))
      fail("documents panel: " + JSON.stringify(panel) + " want " + JSON.stringify(want.map(label)));
    if (!panel.before.every(([open, shown]) => !open && !shown) || !panel.after.every(([open, shown]) => open && shown))
      fail("sources do not open on a click: " + JSON.stringify([panel.before, panel.after]));
    if (panel.bad || panel.pwned !== null) fail(`markup of a chunk ran: ${panel.bad} elements, window.pwned ${panel.pwned}`);
    console.log(`documents: ${panel.summaries.length} sources (${panel.summaries[0]}), each opening its chunk; no injected element`);
    process.exit(0);
  } catch (e) { fail(e.stack || String(e)); }
};
ws.onerror = e => fail("websocket: " + (e.message || e));
setTimeout(() => fail("timed out"), 120000);
