// The dashboard's overview (GET /v1/overview) and a key's settings (PUT /v1/keys/{id}/settings), beside
// app.js, which loads after this file and shares its functions (el, api, show, labelled, say): docs/plans.md.

/** A meter of `value` against `max` compute units, with its numbers as text; no meter without a quota. */
function quotaMeter(label, value, max, prefix) {
  if (!max) return el("p", { class: "meter-line" }, `${label}: ${value.toLocaleString("en")} CU (no quota)`);
  // a quota is spent at 100%; calls served across several proxies may end a little past it, said as such
  const state = value >= max ? "spent" : `${Math.min(99, Math.round((value / max) * 100))}%`;
  return el(
    "div",
    { class: "meter-line" },
    el(
      "span",
      { class: "meter-label" },
      `${label}: ${value.toLocaleString("en")} of ${max.toLocaleString("en")} CU (${state})`,
    ),
    el("meter", {
      min: "0",
      max: String(max),
      low: String(Math.round(max * 0.8)),
      high: String(Math.round(max * 0.95)),
      optimum: "0",
      value: String(Math.min(value, max)),
      "aria-label": `${label}: compute units used by key ${prefix}…`,
      "data-used": String(value),
      "data-quota": String(max),
    }),
  );
}

function plainTable(id, caption, columns, rows) {
  if (rows.length === 0) return el("p", { class: "note" }, `${caption}: none this month.`);
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      { id },
      el("caption", { class: "title" }, caption),
      el("thead", {}, el("tr", {}, ...columns.map((h) => el("th", { scope: "col" }, h)))),
      el(
        "tbody",
        {},
        rows.map((cells) =>
          el(
            "tr",
            {},
            ...labelled(
              columns,
              // counts as the rest of the page writes them: 1,000, not 1000
              cells.map((c) => el("td", {}, typeof c === "number" ? c.toLocaleString("en") : c)),
            ),
          ),
        ),
      ),
    ),
  );
}

/** A method as the usage counts it; "other" is the calls the gateway refused before a method it serves was read. */
function methodText(method) {
  return method === "other" ? "other (refused calls)" : method;
}

function msText(ms) {
  return ms === null ? "over 5 s" : `≤ ${ms} ms`;
}

// biome-ignore lint/correctness/noUnusedVariables: app.js's router calls it
async function overviewView() {
  // the keys' status and rates are the key list's (GET /v1/keys): the overview counts what they spent
  const [o, { keys }] = await Promise.all([api("GET", "/v1/overview"), api("GET", "/v1/keys")]);
  const viewOf = (id) => keys.find((k) => k.id === id);
  const cards = o.keys.map((key) => {
    const view = viewOf(key.id);
    // a revoked or expired key is shown as such, without a way to settings it can no longer have
    const active = view?.status === "active";
    return el(
      "section",
      { class: "card", "data-key-id": key.id, "aria-labelledby": `key-${key.id}` },
      el("h2", { id: `key-${key.id}` }, el("code", {}, `${key.prefix}…`), ` ${planName(key.plan)} plan`),
      view === undefined ? [] : el("p", { class: "key-status" }, `Status: ${statusText(view)}`),
      // the rates that limit it, each in its unit: its plan's compute units and its own calls
      view === undefined || !active
        ? []
        : el(
            "p",
            { class: "key-rate" },
            `Rate: ${rateTexts(view).join(" and ")}, whichever is reached first.`,
          ),
      // what spends the quota: the key's line (the keys it replaced by rotation too), or on a plan whose
      // quota is the account's, every key of the account on that plan
      quotaMeter("Today", key.quota.used.today, key.quota.daily, key.prefix),
      quotaMeter("This month", key.quota.used.month, key.quota.monthly, key.prefix),
      key.quota.per === "account"
        ? el("p", { class: "note" }, "This plan's quotas count every key of your account on it together.")
        : [],
      el(
        "p",
        {},
        `${counted(key.today.calls, "call")} today, ${key.month.calls.toLocaleString("en")} this month.`,
      ),
      plainTable(
        `networks-${key.id}`,
        "Per network",
        ["Network", "Calls today", "CU today", "Calls this month", "CU this month"],
        key.networks.map((n) => [
          labelName(n.label),
          n.today.calls,
          n.today.units,
          n.month.calls,
          n.month.units,
        ]),
      ),
      el(
        "p",
        { class: "actions" },
        active
          ? el(
              "a",
              { href: `#/keys/${key.id}/settings`, "aria-label": `Settings of key ${key.prefix}…` },
              "Settings",
            )
          : [],
        el(
          "a",
          { href: `#/keys/${key.id}/usage`, "aria-label": `Usage by day of key ${key.prefix}…` },
          "Usage by day",
        ),
      ),
    );
  });
  show(
    "Overview",
    el(
      "p",
      {},
      `${o.month} so far (UTC). Daily quotas reset at ${o.resets.day.replace("T", " ").slice(0, 16)} UTC, monthly ones at ${o.resets.month.replace("T", " ").slice(0, 16)} UTC.`,
    ),
    o.keys.length === 0 ? el("p", {}, "No keys yet: ", el("a", { href: "#/keys" }, "get one")) : cards,
    el("h2", {}, "This month"),
    plainTable(
      "latency",
      "Gateway time per network",
      ["Network", "Calls", "p50", "p95"],
      o.latency.map((l) => [labelName(l.label), l.calls, msText(l.p50Ms), msText(l.p95Ms)]),
    ),
    plainTable(
      "errors",
      "Errors by code",
      ["Code", "What it means", "Calls"],
      o.errors.map((e) => [e.code, e.message ?? "", e.count]),
    ),
    plainTable(
      "slowest",
      "Slowest methods",
      ["Network", "Method", "Calls", "Mean time"],
      o.slowest.map((m) => [labelName(m.label), methodText(m.method), m.calls, `${m.meanMs} ms`]),
    ),
    plainTable(
      "dearest",
      "Most compute units",
      ["Network", "Method", "Calls", "CU"],
      o.dearest.map((m) => [labelName(m.label), methodText(m.method), m.calls, m.units]),
    ),
  );
}

const SETTING_FIELDS = [
  [
    "origins",
    "Allowed origins",
    "One per line: https://app.example.com, or https://*.example.com for every subdomain.",
  ],
  ["ips", "Allowed client IPs", "One per line: 203.0.113.7, or a block such as 10.0.0.0/8 or 2001:db8::/32."],
  [
    "methods",
    "Allowed methods",
    "One per line: eth_call, eth_get* or a REST route such as GET /v2/accounts/{}.",
  ],
  [
    "contracts",
    "Allowed contracts",
    "One per line: the contracts eth_call, eth_getLogs, simulations, traces of a call and code or storage reads may name (TRON: base58 or hex, either form).",
  ],
];

// biome-ignore lint/correctness/noUnusedVariables: app.js's router calls it
async function settingsView(id) {
  const { keys } = await api("GET", "/v1/keys");
  const key = keys.find((k) => String(k.id) === String(id));
  if (!key) return show("No such key", el("p", {}, el("a", { href: "#/keys" }, "Back to your keys")));
  const back = el(
    "p",
    { class: "actions" },
    el("a", { href: "#/keys" }, "Back to your keys"),
    el("a", { href: "#/overview" }, "Back to the overview"),
  );
  // a revoked or expired key works no more, and the API refuses its settings (KEY_NOT_FOUND): no form
  if (key.status !== "active")
    return show(`Settings of ${key.prefix}…`, el("p", { id: "settings-ended" }, endedText(key)), back);
  const settings = key.settings ?? {};
  const problem = el("p", { id: "settings-problem", class: "error", role: "alert", hidden: true });
  const areas = SETTING_FIELDS.map(([name, title, hint]) => {
    const area = el("textarea", {
      id: `setting-${name}`,
      name,
      rows: "3",
      "aria-describedby": `hint-${name}`,
    });
    area.value = (settings[name] ?? []).join("\n");
    return [
      name,
      el(
        "div",
        { class: "field" },
        el("label", { for: `setting-${name}` }, title),
        el("p", { id: `hint-${name}`, class: "note" }, hint),
        area,
      ),
    ];
  });
  const jwt = el("textarea", {
    id: "setting-jwtKeys",
    name: "jwtKeys",
    rows: "4",
    "aria-describedby": "hint-jwtKeys",
  });
  // a key's id (the JWT header's kid picks it) is the line "id: …" above its PEM
  jwt.value = (settings.jwtKeys ?? []).map((k) => (k.id ? `id: ${k.id}\n${k.pem}` : k.pem)).join("\n\n");
  /** A list's entries, one a line, with the line each is on: blank lines are skipped, not counted out. */
  const lines = (text) =>
    text
      .split("\n")
      .map((l, i) => [l.trim(), i + 1])
      .filter(([l]) => l !== "");
  /**
   * Every PEM block pasted (SPKI's PUBLIC KEY, PKCS#1's RSA PUBLIC KEY: the server says which it cannot
   * use), each with the id on the line above it, as written: an id the server cannot take is refused by
   * its rule, not as a paste that is no PEM; undefined when anything else is in the field.
   */
  const pems = (text) => {
    const block =
      /(?:^|\n)[ \t]*(?:id:[ \t]*([^\n]*?)[ \t]*\n)?[ \t]*(-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \3-----)/g;
    const keys = [];
    let rest = text;
    for (const [whole, id, pem] of text.matchAll(block)) {
      keys.push(id === undefined ? { pem } : { id, pem });
      rest = rest.replace(whole, "");
    }
    return rest.trim() === "" ? keys : undefined;
  };
  // A refusal is said under the field it names, which it describes to a screen reader, and takes the focus
  // there; one that names no field is said above the button.
  const showProblem = (area, text) => {
    problem.textContent = text;
    problem.hidden = false;
    if (area === null) return button.before(problem);
    area.after(problem);
    area.setAttribute("aria-invalid", "true");
    area.setAttribute("aria-describedby", `${area.getAttribute("aria-describedby")} settings-problem`);
    area.focus();
  };
  const button = el("button", { type: "submit" }, "Save settings");
  const form = el(
    "form",
    {
      id: "settings",
      onsubmit: async (event) => {
        event.preventDefault();
        // a message from an earlier save, good or bad, would now say something untrue
        say("");
        problem.hidden = true;
        for (const area of form.querySelectorAll("[aria-invalid]")) {
          area.removeAttribute("aria-invalid");
          area.setAttribute("aria-describedby", `hint-${area.name}`);
        }
        const listed = Object.fromEntries(
          areas.map(([name, field]) => [name, lines(field.querySelector("textarea").value)]),
        );
        const body = Object.fromEntries(
          Object.entries(listed).map(([name, entries]) => [name, entries.map(([text]) => text)]),
        );
        body.jwtKeys = pems(jwt.value);
        if (body.jwtKeys === undefined) {
          showProblem(
            jwt,
            "Paste public keys in PEM, each from its -----BEGIN …----- line to its -----END …----- line, with a line id: … above it if you name it.",
          );
          return;
        }
        try {
          await api("PUT", `/v1/keys/${id}/settings`, body);
          say("Settings saved: every proxy applies them within a second.");
        } catch (error) {
          // revoked or expired since the page was shown (in another tab, by the operator): said as such
          if (error.code === "KEY_NOT_FOUND") {
            await settingsView(id);
            return say("Not saved: this key was revoked or has expired.", true);
          }
          const [, name, index] = /^(\w+)(?:\[(\d+)\])?$/.exec(error.data?.field ?? "") ?? [];
          const area = name === undefined ? null : document.getElementById(`setting-${name}`);
          if (area === null || error.data?.reason === undefined) return showProblem(null, error.message);
          const entry = index === undefined ? undefined : body[name]?.[Number(index)];
          const line = index === undefined ? undefined : listed[name]?.[Number(index)]?.[1];
          // a reason says what an entry must be; one about the whole list names no entry
          if (entry === undefined) return showProblem(area, `The list must be ${error.data.reason}.`);
          // a JWT key is a {pem} and many lines long: it is named by its place among the keys
          const where =
            typeof entry === "string" ? `Line ${line}, “${entry}”: ` : `Key ${Number(index) + 1}: `;
          showProblem(area, `${where}not ${error.data.reason}.`);
        }
      },
    },
    areas.map(([, field]) => field),
    el(
      "div",
      { class: "field" },
      el("label", { for: "setting-jwtKeys" }, "JWT public keys"),
      el(
        "p",
        { id: "hint-jwtKeys", class: "note" },
        "With keys here, every call needs Authorization: Bearer <JWT> signed RS256 or ES256 by one of them, with an exp claim. A line id: <kid> above a key names it, for tokens whose kid header picks it.",
      ),
      jwt,
    ),
    problem,
    button,
  );
  show(
    `Settings of ${key.prefix}…`,
    el("p", {}, "An empty list allows everything. With several lists, a call must pass each of them."),
    form,
    // reached from the key list and from the overview: both ways back
    back,
  );
}

/** Why a key that is not active has no settings to edit. */
function endedText(key) {
  const ended = "it no longer works, and its settings cannot be changed.";
  if (key.status === "revoked") return `This key is revoked: ${ended}`;
  if (key.replacedBy)
    return `This key was replaced by rotation and its grace period is over: ${ended} Its successor is in your keys.`;
  return `This key has expired: ${ended}`;
}
