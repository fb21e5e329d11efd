// Drives the web console in Debian's Chromium (playwright-core, no
// bundled browser) against a server the Go test started. Environment:
// BASE (the server), TOKEN, CHROMIUM (its path), SHOTS (a folder for the
// screenshots), RELEASE (a URL that lets the scripted model finish its
// streamed answer). Exits non-zero on the first failed check, or when a
// step logged a console error.
import { chromium } from "playwright-core";
import { join } from "node:path";

const { BASE, TOKEN, CHROMIUM, SHOTS, RELEASE } = process.env;
let step = "start";
const errors = [];
let allow401 = false;

function check(ok, what) {
  if (!ok) throw new Error(`${step}: ${what}`);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  const page = await context.newPage();
  page.setDefaultTimeout(20000);
  // A CSP violation (a blocked script, image or style) is recorded.
  await page.addInitScript(() => {
    window.cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));
  });
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (allow401 && /401/.test(m.text())) return;
    errors.push(`${step}: ${m.text()}`);
  });
  page.on("pageerror", (e) => errors.push(`${step}: ${e.message}`));
  const shot = (name) => page.screenshot({ path: join(SHOTS, name) });

  step = "landing page: the catalogue";
  await page.goto(BASE + "/#token=" + TOKEN);
  await page.locator('tr[data-tool="text:regex"]').waitFor();
  check(!page.url().includes("token="), "the token stays in the address bar");
  check(await page.locator("#catalogue").isVisible(), "the catalogue is not the landing page");
  check((await page.locator("#status").textContent()).includes("tools"), "no status line");
  // The status line is checked again and again, never left as it was.
  const checked = await page.locator("#live", { hasText: "ready · checked" }).textContent();
  await page.waitForFunction((before) => document.getElementById("live").textContent !== before, checked, { timeout: 20000 });

  step = "try-it: defaults untouched";
  await page.fill("#tool-filter", "text:");
  check(await page.locator('tr[data-tool="core:echo"]').isHidden(), "the filter does not narrow the list");
  await page.click('[data-try="text:regex"]');
  check(await page.locator("#arg-text").evaluate((e) => e.tagName === "TEXTAREA"), "a string is not multi-line");
  check((await page.getAttribute("#arg-limit", "placeholder")) === "default: 1000", "the default is not a placeholder");
  check((await page.locator("#arg-mode option").first().textContent()) === '(default: "find")', "the menu shows no default");
  check(await page.locator("#arg-pattern").evaluate((e) => e === document.activeElement), "the form's first field has no focus");
  // Validation from the schema, before anything is sent.
  await page.fill("#arg-limit", "0");
  await page.click("#tryit-form button[type=submit]");
  check((await page.locator("#arg-limit-msg").textContent()) === "at least 1", "limit 0 gives no message");
  check((await page.locator("#arg-pattern-msg").textContent()) === "required", "a missing required field gives no message");
  await page.fill("#arg-limit", "two");
  check((await page.locator("#arg-limit-msg").textContent()) === "not a number", "a word in a number field gives no message");
  await page.fill("#arg-limit", "");
  await page.fill("#arg-pattern", "o+");
  await page.fill("#arg-text", "foo boo");
  await page.click("#tryit-form button[type=submit]");
  await page.locator('#tryit-result [data-status="success"]').waitFor();
  const box = await page.locator("#tryit").boundingBox();
  const table = await page.locator("#tools").boundingBox();
  check(box.x > table.x + table.width - 1, "the result is not beside the catalogue at 1280 pixels");
  await shot("console-tryit.png");

  step = "try-it: csv-to-json keeps its header row";
  await page.fill("#tool-filter", "");
  await page.click('[data-try="data:csv-to-json"]');
  await page.fill("#arg-csv", "fruit,price\napple,1.5");
  await page.click("#tryit-form button[type=submit]");
  await page.locator('#tryit-result [data-status="success"]').waitFor();
  check((await page.locator("#tryit-result .ui-table th").allTextContents()).includes("fruit"), "the header row was taken as data");

  step = "try-it: chosen values, sent from the keyboard";
  await page.click('[data-try="text:regex"]');
  await page.fill("#arg-pattern", "o+");
  await page.fill("#arg-text", "foo boo");
  await page.selectOption("#arg-mode", '"match"');
  await page.selectOption("#arg-caseInsensitive", "false");
  await page.fill("#arg-limit", "2");
  await page.press("#arg-limit", "Enter");
  await page.locator("#tryit-result [data-status]").waitFor();

  step = "try-it: a job";
  await page.click('[data-try="text:stats"]');
  await page.fill("#arg-text", "a b");
  await page.click("#tryit-form [data-async]");
  await page.locator("#tryit-result code").waitFor();
  const jobID = await page.locator("#tryit-result code").textContent();
  // A failing job, for the analytics.
  await page.click('[data-try="text:regex"]');
  await page.fill("#arg-pattern", "(");
  await page.fill("#arg-text", "x");
  await page.click("#tryit-form [data-async]");
  await page.locator("#tryit-result code").waitFor();
  await page.click('nav a[data-view="jobs"]');
  await page.locator(`#job-table tr[data-job="${jobID}"][data-state]`).waitFor();
  check((await page.locator("#job-table tr[data-job]").count()) === 2, "the jobs are not listed");

  step = "a job cancelled";
  await page.click('nav a[data-view="catalogue"]');
  await page.fill("#tool-filter", "app:wait");
  await page.click('[data-try="app:wait"]');
  await page.click("#tryit-form [data-async]");
  await page.locator("#tryit-result code").waitFor();
  const waitID = await page.locator("#tryit-result code").textContent();
  await page.fill("#tool-filter", "");
  await page.click('nav a[data-view="jobs"]');
  const waiting = page.locator(`#job-table tr[data-job="${waitID}"]`);
  await page.locator(`#job-table tr[data-job="${waitID}"][data-state="running"]`).waitFor();
  await waiting.locator("[data-cancel]").click();
  await page.locator(`#job-table tr[data-job="${waitID}"]:not([data-state="running"]) td:nth-child(5)`, { hasText: "CANCELLED" }).waitFor();
  check(await waiting.locator("[data-cancel]").isHidden(), "an ended job still offers Cancel");

  step = "try-it: a parameter named __proto__";
  await page.click('nav a[data-view="catalogue"]');
  await page.click('[data-try="app:proto"]');
  await page.fill("#arg-__proto__", "x");
  await page.click("#tryit-form button[type=submit]");
  await page.locator('#tryit-result [data-status="success"]').waitFor();

  step = "an agent run: streamed text and a table";
  await page.click('nav a[data-view="sessions"]');
  await page.click("#new-thread");
  await page.selectOption("#profile", "analyst");
  await page.fill("#message", "Show the fruit");
  await page.press("#message", "Enter");
  // The first half of the answer is on screen while the run goes on.
  await page.locator("#stream [data-message]", { hasText: "Here are the" }).last().waitFor();
  check(await page.locator("#progress").isVisible(), "no progress while the run goes on");
  check((await page.locator('#stream [data-event="RUN_FINISHED"]').count()) === 0, "the run ended before its text was seen");
  check(!(await page.locator("#stream").textContent()).includes("dearest"), "the whole answer came at once");
  await fetch(RELEASE);
  await page.locator('#stream [data-event="RUN_FINISHED"]').waitFor();
  const answer = page.locator("#stream [data-message]", { hasText: "dearest" });
  check((await answer.textContent()).trim() === "Here are the fruit with their prices: pear is the dearest.", "the streamed answer is not whole");
  check(Number(await answer.getAttribute("data-deltas")) > 1, "the answer came in one piece");
  check(await page.locator("#progress").isHidden(), "the progress stays after the run");
  check((await page.locator("#stream .ui-count").textContent()) === "3 rows", "no row count");
  const firstCells = () => page.locator("#stream .ui-table tbody tr td:first-child").allTextContents();
  await page.click('#stream .ui-table th button:text-is("price")');
  check((await firstCells()).join() === "fig,apple,pear", "sorting by price ascending");
  await page.click('#stream .ui-table th button:text-is("price")');
  check((await firstCells()).join() === "pear,apple,fig", "sorting by price descending");
  const thread = await page.locator("#thread-id").textContent();
  check(/^console-[0-9a-f-]{36}$/.test(thread), "the thread ID is not shown: " + thread);
  check(await page.locator("#copy-thread").isVisible(), "no copy button");
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE });
  await page.click("#copy-thread");
  await page.locator("#status", { hasText: "thread ID copied" }).waitFor();
  check((await page.evaluate(() => navigator.clipboard.readText())) === thread, "Copy did not put the thread ID on the clipboard");
  await shot("console-run.png");

  step = "reload, continue the thread from the list";
  await page.reload();
  await page.locator('tr[data-tool="text:regex"]').waitFor();
  await page.click('nav a[data-view="sessions"]');
  const first = page.locator("#session-list button").first();
  await first.waitFor();
  check((await first.getAttribute("data-session")) === thread, "the latest session is not first");
  check((await first.textContent()).includes("Show the fruit"), "the list lacks the first message");
  await first.click();
  await page.locator("#history .ui-table").waitFor();
  check((await page.locator("#history").textContent()).includes("pear is the dearest."), "the history lacks the answer");
  check((await page.locator("#thread-id").textContent()) === thread, "the thread ID is not the session's");
  await page.fill("#message", "And once more");
  await page.press("#message", "Enter");
  await fetch(RELEASE);
  await page.locator('#stream [data-event="RUN_FINISHED"]').waitFor();
  const hist = await (await fetch(`${BASE}/v1/sessions/${thread}/messages`, { headers: { Authorization: "Bearer " + TOKEN } })).json();
  const users = hist.messages.filter((m) => m.role === "user");
  check(users.length === 2 && users.every((m) => m.run === "answered"), "the thread was not continued: " + JSON.stringify(users));
  await shot("console-sessions.png");

  step = "a history of 10,000 messages pages";
  await page.click('#session-list button[data-session="long-thread"]');
  await page.locator('#history [data-seq="10000"]').waitFor();
  check((await page.locator("#history [data-seq]").count()) === 100, "the first page is not 100 messages");
  check((await page.locator("#history [data-seq]").first().getAttribute("data-seq")) === "9901", "the first page is not the latest");
  await page.click("#older");
  await page.locator('#history [data-seq="9801"]').waitFor();
  check((await page.locator("#history [data-seq]").count()) === 200, "the older page was not added");

  step = "a run stopped mid-way is marked";
  await page.click("#new-thread");
  await page.selectOption("#profile", "slow");
  await page.fill("#message", "Take your time");
  await page.press("#message", "Enter");
  await page.locator("#stream [data-message]", { hasText: "Thinking" }).waitFor();
  const slow = await page.locator("#thread-id").textContent();
  await page.click("#stop");
  await page.locator("#stream .event.error", { hasText: "stopped" }).waitFor();
  // The server notices the client left and ends the run.
  for (let i = 0; ; i++) {
    const h = await (await fetch(`${BASE}/v1/sessions/${slow}/messages`, { headers: { Authorization: "Bearer " + TOKEN } })).json();
    if (h.messages[0]?.run === "interrupted") break;
    check(i < 200, "the stopped run is not marked: " + JSON.stringify(h.messages[0]));
    await new Promise((r) => setTimeout(r, 50));
  }
  await page.click(`#session-list button[data-session="${slow}"]`);
  await page.locator('#history [data-run="interrupted"]').waitFor();

  step = "a result at the output cap";
  await page.click("#new-thread");
  await page.selectOption("#profile", "big");
  await page.fill("#message", "Something big");
  await page.press("#message", "Enter");
  await page.locator('#stream [data-event="RUN_FINISHED"]').waitFor({ timeout: 60000 });
  check((await page.locator("#stream .ui-count").textContent()) === "200 of 12000 rows shown", "the big table has no count");
  await page.click('#stream button:text-is("Show all rows")');
  await page.locator("#stream .ui-table tbody tr").nth(11999).waitFor();

  step = "hostile results stay text";
  await page.click("#new-thread");
  await page.selectOption("#profile", "hostile");
  await page.fill("#message", "Try your worst");
  await page.press("#message", "Enter");
  await page.locator('#stream [data-event="RUN_FINISHED"]').waitFor();
  // Open every tree, so that lazily built nodes are built too.
  for (let i = 0; i < 4; i++) await page.evaluate(() => document.querySelectorAll("#stream details:not([open])").forEach((d) => { d.open = true; }));
  const hostileDOM = () => page.evaluate(() => ({
    ids: ["xss", "answerxss"].filter((id) => document.getElementById(id)),
    handlers: document.querySelectorAll("[onerror],[onload],[onclick]").length,
    scripts: document.scripts.length,
    frames: document.querySelectorAll("iframe,object,embed").length,
    imgs: [...document.querySelectorAll("#stream img, #history img")].map((i) => i.getAttribute("src")),
    xss: window.xss,
    csp: window.cspViolations,
    kinds: [...document.querySelectorAll("#stream .ui[data-kind], #history .ui[data-kind]")].map((e) => e.dataset.kind),
  }));
  const checkHostile = async (where) => {
    const dom = await hostileDOM();
    check(dom.ids.length === 0 && dom.handlers === 0 && dom.scripts === 1 && dom.frames === 0 && dom.xss === undefined, where + ": hostile markup became elements: " + JSON.stringify(dom));
    check(dom.imgs.length === 0, where + ": a hostile image was loaded: " + dom.imgs);
    check(dom.csp.length === 0, where + ": the CSP had to block something: " + dom.csp);
    for (const k of ["table", "key-value", "code", "text", "markdown", "image"]) check(dom.kinds.includes(k), where + ": no " + k + " renderer was fed: " + dom.kinds);
    for (const sel of [".ui .diff .add", ".ui .ui-code .tok-str", ".ui .ui-table", ".ui .ui-kv", ".ui .tree", ".ui .ui-text"]) check(await page.locator(sel).count() > 0, where + ": nothing drawn by " + sel);
    const text = await page.locator("main").textContent();
    check(text.includes('<img src=x onerror="window.xss=1" id=xss>'), where + ": the payload is not shown as text");
  };
  await checkHostile("live");
  // The same results from history.
  const hostileThread = await page.locator("#thread-id").textContent();
  await page.click(`#session-list button[data-session="${hostileThread}"]`);
  await page.locator("#history .ui-kv").waitFor();
  for (let i = 0; i < 4; i++) await page.evaluate(() => document.querySelectorAll("#history details:not([open])").forEach((d) => { d.open = true; }));
  await checkHostile("history");

  step = "analytics, audit";
  await page.click('nav a[data-view="analytics"]');
  const row = page.locator('#analytics-table tr[data-tool="app:fruit"]');
  await row.waitFor();
  check(Number(await row.locator("td").nth(1).textContent()) >= 2, "the fruit calls are not counted");
  check((await row.locator("td").nth(4).textContent()).endsWith(" ms"), "no p50");
  const failed = page.locator('#analytics-table tr[data-tool="text:regex"]');
  check((await failed.locator("td").nth(3).textContent()) === "TOOL_ERROR 1", "the failing job is not counted by its code");
  await failed.locator("summary").click();
  check((await failed.locator(".event.error").textContent()).includes("TOOL_ERROR"), "the last failure is not shown");
  await shot("console-analytics.png");
  await page.click('nav a[data-view="audit"]');
  await page.locator('#audit-body details[data-tool="fs:read"]').waitFor();

  step = "800 pixels wide";
  await page.setViewportSize({ width: 800, height: 900 });
  await page.click('nav a[data-view="catalogue"]');
  await page.fill("#tool-filter", "data:");
  await page.click('[data-try="data:csv-to-json"]');
  check(await page.evaluate(() => document.documentElement.scrollWidth <= 800), "the page scrolls sideways at 800 pixels");
  await page.locator("#arg-csv").focus();
  await shot("console-narrow.png");
  await page.click('nav a[data-view="sessions"]');
  check(await page.evaluate(() => document.documentElement.scrollWidth <= 800), "the sessions scroll sideways at 800 pixels");

  step = "a stale token";
  allow401 = true;
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.goto(BASE + "/#token=stale-token");
  await page.locator("#banner", { hasText: "The server restarted or the token changed: paste the new token." }).waitFor();
  check(await page.locator("#token").evaluate((e) => e === document.activeElement), "the token field has no focus");
  await page.fill("#token", TOKEN);
  await page.press("#token", "Enter");
  // The view the person was on comes back with the new token.
  await page.locator("#session-list button").first().waitFor();
  check(await page.locator("#banner").isHidden(), "the banner stays after a good token");
  allow401 = false;

  check(errors.length === 0, "console errors:\n" + errors.join("\n"));
  console.log("console: all steps passed");
} catch (e) {
  console.error(e.message);
  if (errors.length) console.error("console errors:\n" + errors.join("\n"));
  process.exitCode = 1;
} finally {
  await browser.close();
}
