// Drives the console's Approvals view in Debian's Chromium (playwright-core)
// against a server the Go test started with two calls waiting: the one
// whose arguments name secrets/key is allowed once, the other (whose
// arguments hold markup) denied. Environment: BASE, TOKEN (scope admin),
// CHROMIUM, SHOTS. Exits non-zero on the first failed check, or when the
// page logged an error.
import { chromium } from "playwright-core";
import { join } from "node:path";

const { BASE, TOKEN, CHROMIUM, SHOTS } = process.env;
let step = "start";
const errors = [];
function check(ok, what) {
  if (!ok) throw new Error(`${step}: ${what}`);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  page.setDefaultTimeout(20000);
  page.on("console", (m) => { if (m.type() === "error") errors.push(`${step}: ${m.text()}`); });
  page.on("pageerror", (e) => errors.push(`${step}: ${e.message}`));
  page.on("dialog", (d) => { errors.push(`${step}: a dialog opened: ${d.message()}`); d.dismiss(); });

  step = "the list";
  await page.goto(BASE + "/#token=" + TOKEN + "&view=approvals");
  await page.locator("#approval-table tr[data-approval]").nth(1).waitFor();
  check(await page.locator("#approvals").isVisible(), "the approvals view is not shown");
  const secret = page.locator("#approval-table tr[data-approval]", { hasText: "secrets/key" });
  const markup = page.locator("#approval-table tr[data-approval]", { hasText: "onerror" });
  check(await secret.count() === 1 && await markup.count() === 1, "the two calls are not listed");
  const row = await secret.textContent();
  for (const want of ["core:echo", "args:path", "read", "timeout"]) check(row.includes(want), `the row lacks ${want}: ${row}`);
  check(await markup.locator("img").count() === 0, "the arguments' markup became an element");
  check(await secret.locator("button[data-decision]").count() === 3, "not three buttons");
  await page.screenshot({ path: join(SHOTS, "console-approvals.png") });

  step = "allow once";
  await secret.locator('button[data-decision="allow-once"]').click();
  await page.locator("#approval-result", { hasText: "allow-once" }).waitFor();

  step = "deny";
  await markup.locator('button[data-decision="deny"]').click();
  await page.locator("#approval-result", { hasText: "deny" }).waitFor();
  await page.locator("#approval-table td", { hasText: "No call is waiting." }).waitFor();

  check(errors.length === 0, "errors: " + errors.join("; "));
  console.log("approvals console: ok");
} finally {
  await browser.close();
}
