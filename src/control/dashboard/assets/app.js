// The customer dashboard: a few views over the self-service API (docs/accounts.md), with no framework and
// no build step. Every text from the server is set as text, never as markup; the page runs under a strict
// Content-Security-Policy (no inline script). The session lives in an HttpOnly cookie; state changes repeat
// the gw_csrf cookie in X-CSRF-Token. A key is never shown here: it is sent by e-mail, once.

const main = document.getElementById("main");
const status = document.getElementById("status");
let catalog;
let account;

/** A table's rows, each cell labelled by its column, which a phone-wide screen shows beside its value. */
function labelled(headers, cells) {
  return cells.map((cell, i) => {
    cell.setAttribute("data-label", headers[i]);
    return cell;
  });
}

/** "1 call", "2 calls", "1,200 calls": a count with its noun, as a customer reads it. */
function counted(n, noun) {
  return `${n.toLocaleString("en")} ${noun}${n === 1 ? "" : "s"}`;
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value !== undefined && value !== false) node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) node.append(child instanceof Node ? child : String(child));
  return node;
}

function say(text, isError = false) {
  status.textContent = text;
  status.className = isError ? "error" : "";
  // at the page's top, above what the action redrew: in view, wherever the page was scrolled to
  if (text !== "") status.scrollIntoView({ block: "nearest" });
}

function csrf() {
  const match = /(?:^|;\s*)gw_csrf=([^;]+)/.exec(document.cookie);
  return match ? match[1] : "";
}

async function api(method, path, body) {
  const headers = { "x-gateway-client": "dashboard" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method === "POST" || method === "PUT") headers["x-csrf-token"] = csrf();
  const response = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => ({}));
  // a session that ended while the page was open (its hours are up, signed out in another tab): the
  // sign-in page, and the action's answer in words a customer reads, not the API's
  if (response.status === 401 && json.error?.code === "SESSION_REQUIRED" && account !== undefined) {
    const ended = "Your session has ended. Sign in again to go on.";
    signedOut("");
    throw Object.assign(new Error(ended), { code: "SESSION_REQUIRED", status: 401, ended: true });
  }
  if (!response.ok) {
    const wait = waitText(json.error?.retryAfter);
    const message = json.error?.message ?? `HTTP ${response.status}`;
    const error = new Error(wait === "" ? message : `${message}. Try again in ${wait}.`);
    error.code = json.error?.code;
    error.status = response.status;
    // a REST error's members: `field` and `reason` say which input was wrong
    error.data = json.error;
    throw error;
  }
  return json;
}

/** A refusal's `retryAfter` seconds, as a person reads them: "40 seconds", "4 minutes"; "" without one. */
function waitText(seconds) {
  if (!Number.isFinite(seconds) || seconds <= 0) return "";
  if (seconds < 90) return `${Math.ceil(seconds)} second${Math.ceil(seconds) === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 90) return `${minutes} minutes`;
  return `${Math.ceil(minutes / 60)} hours`;
}

/** A link of a key's row, named by its key for a screen reader ("Usage of key FNAav3shaY…"). */
function keyLink(key, page, text) {
  return el("a", { href: `#/keys/${key.id}/${page}`, "aria-label": `${text} of key ${key.prefix}…` }, text);
}

/** A button of a key's row, named by its key ("Rotate key FNAav3shaY…"). */
function keyButton(key, text, look, action) {
  const label = `${text} key ${key.prefix}…`;
  return el("button", { type: "button", class: look, onclick: () => action(key), "aria-label": label }, text);
}

function show(title, ...content) {
  document.title = `${title}: Node gateway`;
  main.replaceChildren(el("h1", {}, title), ...content.flat());
  main.focus();
}

function networkName(code) {
  return catalog.networks.find((n) => n.code === code)?.name ?? code;
}

/**
 * A label as the usage tables show it: "eth (Ethereum)", "sepolia (Ethereum testnet)", its network's
 * name beside the label the URLs and the usage counts use; the label alone for one the catalog lacks.
 */
function labelName(label) {
  for (const network of catalog.networks) {
    const endpoint = network.endpoints.find((e) => e.label === label);
    if (endpoint === undefined) continue;
    const environment = endpoint.environment === "mainnet" ? "" : ` ${endpoint.environment}`;
    const archive = endpoint.nodeClass === "archive" ? ", archive" : "";
    return `${label} (${network.name}${environment}${archive})`;
  }
  return label;
}

function deliveryNote() {
  return catalog.mail.outbox
    ? "This gateway sends no e-mail: it was written to the gateway's outbox folder, which its operator reads."
    : "Check your inbox.";
}

// ---- signed out ----

/** The header of no one's account: no e-mail, no pages, no sign-out. */
function clearAccountHeader() {
  document.getElementById("account-email").textContent = "";
  document.getElementById("account-nav").hidden = true;
  document.getElementById("page-nav").hidden = true;
}

/** The sign-in page, with the header of the account that was signed in cleared. */
function signedOut(message) {
  account = undefined;
  clearAccountHeader();
  signInView(message);
}

function signInView(message) {
  const email = el("input", {
    id: "email",
    type: "email",
    name: "email",
    autocomplete: "email",
    required: true,
  });
  const token = el("input", { id: "token", name: "token", autocomplete: "one-time-code", required: true });
  show(
    "Sign up or sign in",
    message ? el("p", { role: "alert" }, message) : "",
    offer(),
    el("p", {}, "Enter your e-mail address. We send a link that signs you in; no password."),
    el(
      "form",
      { id: "email-form", onsubmit: (e) => submitEmail(e, email.value) },
      el("label", { for: "email" }, "E-mail address"),
      email,
      el(
        "div",
        { class: "actions" },
        el("button", { type: "submit", name: "signup" }, "Sign up"),
        " ",
        el("button", { type: "submit", name: "signin", class: "quiet" }, "Sign in"),
      ),
    ),
    el(
      "form",
      { id: "token-form", onsubmit: (e) => submitToken(e, token.value.trim()) },
      el("label", { for: "token" }, "Have a token from the e-mail? Paste it here"),
      token,
      el("button", { type: "submit" }, "Continue"),
    ),
  );
}

/** "a", "a or b", "a, b or c". */
function listed(names) {
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
}

/** What a visitor gets, from the catalog: the networks served, each in its own interface, and the free test. */
function offer() {
  const names = catalog.networks.map((n) => n.name);
  return el(
    "section",
    { id: "offer", "aria-label": "What you get" },
    el(
      "p",
      {},
      `One API key for the nodes of ${counted(names.length, "network")}, each in its own interface: `,
      `${names.join(", ")}. `,
      `Try one free for ${counted(catalog.freeTest.days, "day")}`,
      catalog.plans.length > 0 ? `, then choose a plan: ${listed(catalog.plans.map((p) => p.name))}.` : ".",
    ),
  );
}

async function submitEmail(event, email) {
  event.preventDefault();
  const signup = event.submitter?.name !== "signin";
  try {
    await api("POST", signup ? "/v1/signup" : "/v1/login", { email });
    // the same answer whether the address has an account or not (no one learns whose it is): the e-mail
    // itself says which, a confirmation or, for an address that has an account, a way to sign in
    say(`${signup ? "E-mail" : "Sign-in e-mail"} sent to ${email}. ${deliveryNote()}`);
  } catch (error) {
    say(error.message, true);
  }
}

async function submitToken(event, token) {
  event.preventDefault();
  // a sign-in token or a confirmation token: the one that knew it says what is wrong with it
  await redeem(token, "/v1/session")
    .catch((first) =>
      redeem(token, "/v1/confirm").catch((second) => {
        throw first.code === "TOKEN_EXPIRED" ? first : second;
      }),
    )
    .catch((error) => say(linkProblem(error, "token"), true));
}

/** Signs in with a token from an e-mail: the keys page, or the error for the caller to show. */
async function redeem(token, path) {
  account = (await api("POST", path, { token })).account;
  history.replaceState(null, "", "#/keys");
  await route();
}

/** What a used, expired or mistyped link or pasted token means for the customer, and the way on. */
function linkProblem(error, what = "link") {
  const again = "Enter your e-mail address below to get a new one.";
  if (error.code === "TOKEN_EXPIRED") return `This ${what} has expired. ${again}`;
  if (error.code === "TOKEN_INVALID")
    return what === "link"
      ? `This link was already used, or it is not a whole link. ${again}`
      : `This token was already used, or it is not the whole token from the e-mail. ${again}`;
  return error.message;
}

// ---- keys ----

const KEY_COLUMNS = ["Key", "Plan", "Networks", "Archive", "Rate", "Status", "Created", "Expires", "Actions"];

async function keysView() {
  const { keys } = await api("GET", "/v1/keys");
  const rows = keys.map((key) =>
    el(
      "tr",
      { "data-key-id": key.id },
      ...labelled(KEY_COLUMNS, [
        el("td", {}, el("code", {}, `${key.prefix}…`)),
        el("td", {}, el("span", { class: "nowrap" }, planName(key.plan)), quotaLine(key)),
        el("td", {}, key.networks === "*" ? "all" : key.networks.map(networkName).join(", ")),
        el("td", {}, hasArchive(key) ? "yes" : "no"),
        el("td", {}, rateLines(key)),
        el("td", { class: "key-status" }, statusText(key)),
        el("td", { class: "nowrap" }, key.createdAt.slice(0, 10)),
        el(
          "td",
          {},
          key.status === "revoked"
            ? "—"
            : key.expiresAt
              ? // the date whole on a line, its time beside it or below
                [
                  el("span", { class: "nowrap" }, key.expiresAt.slice(0, 10)),
                  " ",
                  el("span", { class: "nowrap" }, `${key.expiresAt.slice(11, 16)} UTC`),
                ]
              : "never",
        ),
        el(
          "td",
          {},
          el(
            "div",
            { class: "actions" },
            // every row has these: a screen reader's list of controls tells them apart by the key
            // the pages on one line, what changes the key on the next: the column stays narrow
            el(
              "span",
              { class: "action-group" },
              keyLink(key, "endpoints", "Endpoints"),
              keyLink(key, "usage", "Usage"),
              key.status === "active" ? keyLink(key, "settings", "Settings") : [],
            ),
            key.status === "active"
              ? el(
                  "span",
                  { class: "action-group" },
                  // a key in its grace period has a successor already: that one is rotated next, unless
                  // it was revoked (leaked as it was sent), when the API rotates this one again
                  hasActiveSuccessor(key, keys) ? [] : keyButton(key, "Rotate", "quiet", rotate),
                  keyButton(key, "Revoke", "danger", revoke),
                )
              : [],
          ),
        ),
      ]),
    ),
  );
  show(
    "Your keys",
    keys.length === 0
      ? el("p", {}, "No keys yet: get one below.")
      : el(
          "div",
          { class: "table-wrap" },
          el(
            "table",
            { id: "keys" },
            el(
              "caption",
              { class: "note" },
              "Keys are shown by their first characters only. The key itself was sent by e-mail. A key is limited by its plan's compute units (CU) a second and by its own calls a second: whichever it reaches first.",
            ),
            el("thead", {}, el("tr", {}, ...KEY_COLUMNS.map((h) => el("th", { scope: "col" }, h)))),
            el("tbody", {}, rows),
          ),
        ),
    getKeyForm(),
    el("p", {}, el("a", { href: "#/usage" }, "Usage of all your keys")),
  );
}

/**
 * The terms of the plan a key is served on: carried by its view (GET /v1/keys), else the catalog's for an
 * orderable plan or the free test; undefined for a plan the page knows nothing of.
 */
function termsOf(key) {
  if (key.terms !== undefined) return key.terms;
  if (key.plan === "free-test" && catalog.freeTest.terms !== undefined) return catalog.freeTest.terms;
  return catalog.plans.find((p) => p.name === key.plan);
}

/** Whether a key reaches archive nodes: its grant, as its plan allows (the key's view says). */
function hasArchive(key) {
  return key.archive;
}

/**
 * The rates that limit a key, each in its unit: its plan's compute units a second and its own calls a
 * second (docs/plans.md: both apply, the first one reached answers).
 */
function rateTexts(key) {
  const n = (value) => value.toLocaleString("en");
  const calls = key.rate ?? catalog.defaultRate;
  const terms = termsOf(key);
  return [
    ...(terms === undefined
      ? []
      : [`${n(terms.computeUnitsPerSecond)} CU/s, bursts of ${n(terms.computeUnitBurst)} CU`]),
    `${n(calls.perSecond)} calls/s, bursts of ${n(calls.burst)} calls`,
  ];
}

/** A key's rates as the keys table shows them, one a line. */
function rateLines(key) {
  return rateTexts(key).map((text) => el("span", { class: "rate-line" }, text));
}

/** "1,000,000 CU a day, 200,000,000 CU a month", "no quota"; a quota of the account says so. */
function quotaText(terms) {
  const n = (value) => value.toLocaleString("en");
  const quotas = [
    terms.dailyQuota > 0 ? `${n(terms.dailyQuota)} CU a day` : "",
    terms.monthlyQuota > 0 ? `${n(terms.monthlyQuota)} CU a month` : "",
  ].filter((text) => text !== "");
  if (quotas.length === 0) return "no quota";
  const text = quotas.join(", ");
  return terms.quotaPer === "account" ? `${text} (one quota for all your keys on this plan)` : text;
}

/** A key's plan terms under its plan's name in the keys table: its quotas, and archive if the key has it. */
function quotaLine(key) {
  const terms = termsOf(key);
  if (terms === undefined) return "";
  return el(
    "span",
    { class: "note plan-terms" },
    `${quotaText(terms)}${hasArchive(key) ? ", archive nodes" : ""}`,
  );
}

/** Whether a key was rotated to a successor that still works (the API refuses to rotate it again). */
function hasActiveSuccessor(key, keys) {
  if (!key.replacedBy) return false;
  return keys.find((k) => k.id === key.replacedBy)?.status === "active";
}

function statusText(key) {
  if (key.status === "expired" && key.replacedBy) return `replaced (rotation grace period over)`;
  // a key revoked in its grace period is refused at once: "active until" would tell its owner otherwise
  if (key.status === "revoked") return "revoked";
  if (key.replacedBy)
    return `active until ${key.expiresAt.replace("T", " ").slice(0, 16)} UTC (rotation grace period)`;
  return key.status;
}

function getKeyForm() {
  const network = el(
    "select",
    { id: "network", name: "network", required: true },
    catalog.networks.map((n) => el("option", { value: n.code }, `${n.name} (${n.code})`)),
  );
  // the deployment's orderable plans, as the API takes orders for them (GET /v1/networks); the chosen one's
  // terms below the list, where they wrap on a phone as an option's text cannot
  const terms = el("p", { id: "plan-terms", class: "note", "aria-live": "polite" });
  const plan = el(
    "select",
    { id: "plan", name: "plan", "aria-describedby": "plan-terms", onchange: () => describePlan() },
    el("option", { value: "free-test" }, planName("free-test")),
    catalog.plans.map((p) => el("option", { value: p.name }, planName(p.name))),
  );
  const describePlan = () => {
    const chosen = catalog.plans.find((p) => p.name === plan.value);
    const free = catalog.freeTest;
    terms.textContent =
      chosen !== undefined
        ? planTerms(chosen)
        : `Free for ${counted(free.days, "day")}${free.terms === undefined ? "" : `, with ${planTerms(free.terms).replace(/\.$/, "")}`}; then the key expires.`;
  };
  describePlan();
  return el(
    "form",
    { id: "get-key", onsubmit: (e) => getKey(e, network.value, plan.value) },
    el("h2", {}, "Get a key"),
    el("label", { for: "network" }, "Network"),
    network,
    el("label", { for: "plan" }, "Plan"),
    plan,
    terms,
    el("button", { type: "submit" }, "Send me the key"),
    el("p", { class: "note" }, "The key is sent to your e-mail address and is not shown here."),
  );
}

/** A plan's name as the pages show it: "shared" as "Shared", "free-test" as "Free test". */
function planName(name) {
  return `${name.slice(0, 1).toUpperCase()}${name.slice(1).replaceAll("-", " ")}`;
}

/**
 * "2,000 CU a second, 10,000,000 CU a day, 200,000,000 CU a month."; a plan whose quotas are the
 * account's says so: "… CU a month (one quota for all your keys on this plan)."
 */
function planTerms(plan) {
  const terms = [
    `${plan.computeUnitsPerSecond.toLocaleString("en")} CU a second`,
    quotaText(plan),
    ...(plan.archive ? ["archive nodes"] : []),
  ];
  return `${terms.join(", ")}.`;
}

async function getKey(event, network, plan) {
  event.preventDefault();
  try {
    const answer =
      plan === "free-test"
        ? await api("POST", "/v1/free-tests", { network })
        : await api("POST", "/v1/orders", { network, plan });
    await keysView();
    say(`Key ${answer.key.prefix}… for ${networkName(network)} sent to ${account.email}. ${deliveryNote()}`);
  } catch (error) {
    // the refusal's reason says which rule it met ("this account has had the free test of eth"), beside
    // the keys as they now are: those that met it may have been got in another tab. Any other refusal
    // (a rate) leaves the form as it was chosen, to send again
    const keysCount = error.code === "KEY_LIMIT" || error.code === "FREE_TEST_LIMIT";
    await refused(error, keysCount);
  }
}

async function rotate(key) {
  if (
    !confirm(
      `Rotate ${key.prefix}…? A new key is e-mailed to you; the old one keeps working for the grace period, then stops.`,
    )
  )
    return;
  try {
    const answer = await api("POST", `/v1/keys/${key.id}/rotate`);
    await keysView();
    say(
      `New key ${answer.key.prefix}… sent. ${deliveryNote()} ${key.prefix}… works until its grace period ends.`,
    );
  } catch (error) {
    await refused(error);
  }
}

/**
 * A refused order, rotation or revocation, said beside the keys as they now are: one refused for what was
 * done elsewhere (another tab, the API) names what the page did not show, such as the successor to rotate.
 */
async function refused(error, redraw = true) {
  if (error.ended) return say(error.message, true);
  if (redraw) await keysView().catch(() => {});
  const reason = error.data?.reason;
  say(reason === undefined ? error.message : `${error.message}: ${reason}.`, true);
}

async function revoke(key) {
  if (!confirm(`Revoke ${key.prefix}…? It stops working at once, everywhere. This cannot be undone.`)) return;
  try {
    await api("POST", `/v1/keys/${key.id}/revoke`);
    await keysView();
    say(`${key.prefix}… revoked.`);
  } catch (error) {
    await refused(error);
  }
}

// ---- endpoints ----

async function endpointsView(id) {
  const { keys } = await api("GET", "/v1/keys");
  const key = keys.find((k) => String(k.id) === id);
  if (!key) return show("No such key", el("p", {}, el("a", { href: "#/keys" }, "Back to your keys")));
  const networks = catalog.networks.filter((n) => key.networks === "*" || key.networks.includes(n.code));
  // Every URL, curl line and snippet comes from the server (GET /v1/networks), built where the key
  // e-mails' are (src/control/endpoint-urls.ts), with the placeholder where the key goes.
  const sections = networks.map((network) =>
    el(
      "section",
      { "data-network": network.code },
      el("h2", {}, network.name),
      network.endpoints
        .filter((e) => hasArchive(key) || e.nodeClass !== "archive")
        .map((e) =>
          el(
            "div",
            {},
            el("p", { class: "note" }, `${e.label}: ${e.environment}, ${e.nodeClass} node`),
            copyable(`${e.label} HTTP URL`, e.http),
            e.ws ? copyable(`${e.label} WebSocket URL`, e.ws) : "",
          ),
        ),
      el("p", {}, "A first call:"),
      el("pre", {}, network.curl),
      network.sdk
        ? [
            el(
              "p",
              {},
              network.sdk.name === "fetch"
                ? "With fetch, built into browsers and Node (no SDK needed):"
                : `With ${network.sdk.name}:`,
            ),
            el("pre", { class: "sdk" }, network.sdk.code),
          ]
        : "",
    ),
  );
  show(
    `Endpoints of ${key.prefix}…`,
    el("p", {}, `Put your key, from the e-mail, where the URLs say ${catalog.keyPlaceholder}.`),
    sections,
    el("p", {}, el("a", { href: "#/keys" }, "Back to your keys")),
  );
}

function copyable(label, text) {
  return el(
    "div",
    { class: "url" },
    el("code", { "aria-label": label }, text),
    el(
      "button",
      {
        type: "button",
        class: "quiet",
        "aria-label": `Copy ${label}`,
        onclick: async () => {
          await navigator.clipboard.writeText(text);
          say(`Copied the ${label}.`);
        },
      },
      "Copy",
    ),
  );
}

// ---- usage ----

async function usageView(id) {
  let report;
  try {
    report = id === undefined ? await api("GET", "/v1/usage") : await api("GET", `/v1/keys/${id}/usage`);
  } catch (error) {
    // as the key's other pages do: a page that says so, not "Loading…" with a line at the bottom
    if (error.code !== "KEY_NOT_FOUND") throw error;
    return show("No such key", el("p", {}, el("a", { href: "#/keys" }, "Back to your keys")));
  }
  const days = new Map();
  for (const row of report.days) {
    const day = days.get(row.day) ?? { calls: 0, errors: 0, byNetwork: new Map() };
    day.calls += row.calls;
    day.errors += row.errors;
    day.byNetwork.set(row.label, (day.byNetwork.get(row.label) ?? 0) + row.calls);
    days.set(row.day, day);
  }
  const title = id === undefined ? "Usage of all your keys" : `Usage of ${report.key.prefix}…`;
  // the all-keys report names each row's key; days are UTC days
  // compute units beside calls: what the plan's quotas count, and what the customer pays for
  const columns = [...(id === undefined ? ["Key"] : []), "Day (UTC)", "Network", "Calls", "CU", "Errors"];
  show(
    title,
    el(
      "p",
      {},
      `${report.from} to ${report.to}: ${counted(report.total.calls, "call")}, ${report.total.units.toLocaleString("en")} CU, ${counted(report.total.errors, "error")}.`,
    ),
    el("div", { class: "chart" }, chart(everyDay(report.from, report.to, days))),
    el(
      "div",
      { class: "table-wrap" },
      el(
        "table",
        { id: "usage" },
        el("thead", {}, el("tr", {}, ...columns.map((h) => el("th", { scope: "col" }, h)))),
        el(
          "tbody",
          {},
          report.days.map((row) =>
            el(
              "tr",
              {},
              ...labelled(columns, [
                ...(id === undefined ? [el("td", {}, el("code", {}, `${row.key}…`))] : []),
                el("td", { class: "nowrap" }, row.day),
                el("td", {}, labelName(row.label)),
                el("td", {}, row.calls.toLocaleString("en")),
                el("td", {}, row.units.toLocaleString("en")),
                el("td", {}, row.errors.toLocaleString("en")),
              ]),
            ),
          ),
        ),
      ),
    ),
    el("p", {}, el("a", { href: "#/keys" }, "Back to your keys")),
  );
}

/** Each day of the range with its counts, zero on a day without calls, so the bars keep their places. */
function everyDay(from, to, days) {
  const all = [];
  for (let t = Date.parse(from); t <= Date.parse(to); t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    all.push([day, days.get(day) ?? { calls: 0, errors: 0, byNetwork: new Map() }]);
  }
  return all;
}

/** Calls per day as bars, errors as a darker bar at their foot: plain SVG, no library. */
function chart(days) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  // drawn at about the width it is shown at: scaled down from 640 to a phone's 360, its text was 7 px high
  const narrow = matchMedia("(max-width: 40rem)").matches;
  const width = narrow ? 360 : 640;
  const height = 220;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  const total = days.reduce((n, [, d]) => n + d.calls, 0);
  const busy = days.filter(([, d]) => d.calls > 0);
  svg.setAttribute(
    "aria-label",
    `Calls per day: ${busy.map(([day, d]) => `${day} ${counted(d.calls, "call")}, ${counted(d.errors, "error")}`).join("; ") || "none"}. ${total} in all.`,
  );
  const max = Math.max(1, ...days.map(([, d]) => d.calls));
  const slot = (width - 40) / Math.max(days.length, 1);
  const draw = (tag, attributes, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  // One colour per network (label), in a fixed order: each day's bar is its networks' calls stacked.
  const labels = [...new Set(days.flatMap(([, d]) => [...d.byNetwork.keys()]))].sort();
  const colour = (label) => PALETTE[labels.indexOf(label) % PALETTE.length];
  days.forEach(([day, d], i) => {
    const x = 30 + i * slot;
    const h = (d.calls / max) * (height - 50);
    const eh = (d.errors / max) * (height - 50);
    let top = height - 30;
    for (const label of labels) {
      const calls = d.byNetwork.get(label) ?? 0;
      if (calls === 0) continue;
      const part = (calls / max) * (height - 50);
      top -= part;
      draw("rect", {
        class: "calls",
        x,
        y: top,
        width: Math.max(2, slot * 0.7),
        height: part,
        fill: colour(label),
      }).append(
        Object.assign(document.createElementNS(ns, "title"), {
          textContent: `${day}, ${label}: ${counted(calls, "call")}`,
        }),
      );
    }
    if (d.errors > 0)
      draw("rect", { class: "errors", x, y: height - 30 - eh, width: Math.max(2, slot * 0.7), height: eh });
    // labels centred on their bar: the last day's, drawn from the bar's left edge, ran past the chart's
    const centre = x + Math.max(2, slot * 0.7) / 2;
    const centred = { x: centre, "text-anchor": "middle" };
    if (i % 5 === 0 || i === days.length - 1) draw("text", { ...centred, y: height - 12 }, day.slice(5));
    // a count over each bar where the bars leave it room; else each bar's title and the figure's label say it
    if (d.calls > 0 && slot >= 20) draw("text", { ...centred, y: height - 34 - h }, String(d.calls));
  });
  if (total === 0) draw("text", { x: 30, y: height / 2 }, "No calls in this range yet.");
  const legend = el(
    "ul",
    { class: "legend" },
    labels.map((label) => el("li", {}, el("span", { class: "swatch", "data-colour": colour(label) }), label)),
    days.some(([, d]) => d.errors > 0) ? el("li", {}, el("span", { class: "swatch errors" }), "errors") : "",
  );
  // The CSP allows no inline style: a swatch's colour is set through the DOM, which it does not govern.
  for (const swatch of legend.querySelectorAll("[data-colour]"))
    swatch.style.background = swatch.dataset.colour;
  return el("figure", {}, svg, legend);
}

/** Network colours for the chart, dark enough against white for its thin bars (WCAG 3:1 for graphics). */
const PALETTE = ["#0b5cad", "#7a3e9d", "#1f7a4d", "#a35200", "#5a6270", "#8a1c5b", "#00607a", "#6b5b00"];

/** The dedicated-node option and the support contact: in the footer, and on a "not on your plan" answer. */
function supportLine() {
  return el(
    "p",
    {},
    "Need a node of your own? ",
    el("a", { href: catalog.support.dedicatedNodeUrl }, "Order a dedicated node"),
    ". Questions: ",
    el("a", { href: `mailto:${catalog.support.email}` }, catalog.support.email),
    ".",
  );
}

// ---- routing ----

async function route() {
  const hash = location.hash;
  // whatever follows `=`: a link a mail client cut or added to is refused by the server, and said so
  const token = /^#(confirm|signin)=(.*)$/.exec(hash);
  if (token) {
    history.replaceState(null, "", "#/");
    return redeem(token[2], token[1] === "confirm" ? "/v1/confirm" : "/v1/session").catch((e) =>
      linkRefused(e),
    );
  }
  try {
    // the readable cookie comes and goes with the session's: without it there is no session to ask
    // about, and a first visit shows no 401 in the browser's console
    if (csrf() === "") throw Object.assign(new Error("signed out"), { status: 401 });
    account = (await api("GET", "/v1/account")).account;
  } catch (error) {
    // a first visit, or a cookie left from a session long gone, is no news; one that ended just now is
    return signedOut(error.ended === true || error.status !== 401 ? error.message : "");
  }
  document.getElementById("account-nav").hidden = false;
  document.getElementById("page-nav").hidden = false;
  document.getElementById("account-email").textContent = account.email;
  markPage(hash);
  const keyPage = /^#\/keys\/(\d+)\/(endpoints|usage|settings)$/.exec(hash);
  if (keyPage?.[2] === "settings") return settingsView(keyPage[1]);
  if (keyPage) return keyPage[2] === "endpoints" ? endpointsView(keyPage[1]) : usageView(keyPage[1]);
  if (hash === "#/usage") return usageView(undefined);
  if (hash === "#/overview") return overviewView();
  return keysView();
}

/**
 * A link that no longer signs anyone in (used, expired): a customer already signed in in this browser (the
 * link opened again) goes on to their keys, told why; anyone else gets the sign-in page with the way on.
 */
async function linkRefused(error) {
  const signedIn =
    csrf() !== "" &&
    (await api("GET", "/v1/account").then(
      () => true,
      () => false,
    ));
  if (!signedIn) {
    return signedOut(linkProblem(error));
  }
  await route();
  main.insertBefore(
    el("p", { role: "status" }, "That link was already used or has expired; you are signed in already."),
    main.children[1] ?? null,
  );
}

/** The page navigation's link for the page shown, marked as the current one. */
function markPage(hash) {
  const page = hash.startsWith("#/overview") ? "#/overview" : hash === "#/usage" ? "#/usage" : "#/keys";
  for (const link of document.querySelectorAll("#page-nav a")) {
    if (link.getAttribute("href") === page) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function start() {
  catalog = await api("GET", "/v1/networks");
  document.getElementById("footer").replaceChildren(supportLine());
  document.getElementById("sign-out").addEventListener("click", async () => {
    // the session ends on the server, or not at all: a sign-out that did not reach it leaves the session
    // alive in this browser (a shared computer's next user), so the page says so rather than "Signed out."
    try {
      await api("POST", "/v1/logout");
    } catch (error) {
      if (error.code !== "SESSION_REQUIRED") return say(`Not signed out: ${error.message}. Try again.`, true);
    }
    account = undefined;
    clearAccountHeader();
    // no hashchange: its handler would clear the message below
    history.replaceState(null, "", "#/");
    await route();
    say("Signed out.");
  });
  window.addEventListener("hashchange", () => {
    say("");
    route().catch((e) => say(e.message, true));
  });
  // the link of the page shown loads it again, as a customer watching usage expects: the hash does not
  // change, so no hashchange would
  document.getElementById("page-nav").addEventListener("click", (event) => {
    const link = event.target.closest("a");
    if (link === null || link.getAttribute("href") !== location.hash) return;
    event.preventDefault();
    say("");
    route().catch((e) => say(e.message, true));
  });
  await route();
}

start().catch((error) => say(error.message, true));
