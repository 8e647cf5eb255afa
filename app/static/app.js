// Polyglot Image Search page: plain JS against the /v1 API, no build step.
// It opens on the library (every photo, newest first, by day and month, GET /v1/library); a query searches.
// The query, its filters, a "similar to" photo, a month and an open photo live in the URL
// (?q=…&lang=…&after=…&month=2024-06&photo=42): a page can be shared or reloaded, and the back button steps through
// searches and closes the detail view.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  mode: "library", query: "", lang: "", detectedLang: "", imageId: null, file: null, offset: 0, k: 24, loading: false,
  cursor: null, month: "", libraryK: 40,
};
const PHONE = window.matchMedia("(max-width: 600px)");
const FILTERS = [  // URL parameter, form field, API parameter
  ["after", "taken-after", "taken_after"],
  ["before", "taken-before", "taken_before"],
  ["folder", "folder", "folder"],
  ["near", "near", "near"],
  ["place", "place", "place"],  // a place name (city, region, country), named offline at index time
  ["sort", "sort", "sort"],
];

// ------------------------------------------------------------------ the page's language
// Every string the page shows comes from a message catalogue, one JSON file per language (static/i18n/<lang>.json):
// t(key, vars) fills {placeholders}; a message with plural forms ({"one": …, "other": …}) is chosen by
// Intl.PluralRules on vars.count. The language: the one chosen in the page (remembered), else the browser's first
// one that has a catalogue, else English. Dates and numbers are written by Intl in that language.
const UI_LANGUAGES = ["en", "ar", "cs", "de", "es", "fr", "hi", "id", "it", "ja", "ko", "nl", "pl", "pt", "ru", "sv",
  "th", "tr", "uk", "vi", "zh"];
const RTL = new Set(["ar", "fa", "ur", "he"]);
const STORED_LANGUAGE = "polyglot.page-language";
const i18n = { lang: "en", messages: {}, fallback: {} };

function chooseLanguage() {
  let stored = null;
  try { stored = localStorage.getItem(STORED_LANGUAGE); } catch { /* storage off: the browser's language */ }
  if (stored && UI_LANGUAGES.includes(stored)) return stored;
  const wanted = [...(navigator.languages || []), navigator.language || "", document.documentElement.lang || ""];
  for (const tag of wanted) {
    const code = tag.toLowerCase().split("-")[0];
    if (UI_LANGUAGES.includes(code)) return code;
  }
  return "en";
}

async function loadCatalogue(code) {
  const response = await fetch(`/static/i18n/${code}.json`);
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return response.json();
}

function t(key, vars = {}) {
  let message = i18n.messages[key] ?? i18n.fallback[key] ?? key;
  if (typeof message === "object") {
    const form = new Intl.PluralRules(i18n.lang).select(Number(vars.count ?? 0));
    message = message[form] ?? message.other;
  }
  return message.replace(/\{(\w+)\}/g, (whole, name) => {
    const value = vars[name];
    if (value === undefined || value === null) return whole;
    return typeof value === "number" ? formatNumber(value) : String(value);
  });
}

function formatNumber(value, digits = null) {
  const options = digits === null ? {} : { minimumFractionDigits: digits, maximumFractionDigits: digits };
  return new Intl.NumberFormat(i18n.lang, options).format(value);
}

function languageName(code, inLanguage = i18n.lang) {
  try {
    return new Intl.DisplayNames([inLanguage], { type: "language" }).of(code) || code;
  } catch {
    return code;
  }
}

function translatePage() {
  document.documentElement.lang = i18n.lang;
  document.documentElement.dir = RTL.has(i18n.lang) ? "rtl" : "ltr";
  for (const element of document.querySelectorAll("[data-i18n]")) element.textContent = t(element.dataset.i18n);
  for (const element of document.querySelectorAll("[data-i18n-placeholder]")) {
    element.placeholder = t(element.dataset.i18nPlaceholder);
  }
  for (const element of document.querySelectorAll("[data-i18n-title]")) element.title = t(element.dataset.i18nTitle);
  for (const element of document.querySelectorAll("[data-i18n-aria]")) {
    element.setAttribute("aria-label", t(element.dataset.i18nAria));
  }
  for (const option of $("lang").options) {
    if (option.value) option.textContent = `${languageName(option.value)} (${option.value})`;
  }
}

async function setLanguage(code) {
  const [messages, fallback] = await Promise.all([
    loadCatalogue(code), code === "en" ? null : loadCatalogue("en").catch(() => ({})),
  ]);
  Object.assign(i18n, { lang: code, messages, fallback: fallback || messages });
  translatePage();
}

function fillLanguageSelector() {
  const select = $("ui-lang");
  select.replaceChildren(...UI_LANGUAGES.map((code) => new Option(languageName(code, code), code)));
  select.value = i18n.lang;
  select.addEventListener("change", async () => {
    try { localStorage.setItem(STORED_LANGUAGE, select.value); } catch { /* not remembered, still applied */ }
    await setLanguage(select.value);
    load();  // headings, counts and dates in the new language
  });
}

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

// Every request says the page's language: the server writes place names in it (Accept-Language).
async function api(path, options = {}) {
  const response = await fetch(path, { ...options, headers: { "Accept-Language": i18n.lang, ...options.headers } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail || body);
    throw new Error(detail || `HTTP ${response.status}`);
  }
  return body;
}

async function loadLanguages() {
  const info = await api("/v1/languages");
  const select = $("lang");
  for (const code of info.text_languages || info.caption_languages) {
    const option = document.createElement("option");
    option.value = code;
    option.textContent = `${languageName(code)} (${code})`;
    select.appendChild(option);
  }
  state.captionLanguages = info.caption_languages;
  state.tagLanguages = info.tag_languages || [];
}

// ------------------------------------------------------------------ URL state
// Modes: "library" (no query: every photo, newest first — what the page opens on), "text", "image".
function filterParams() {
  const params = new URLSearchParams();
  for (const [, field, name] of FILTERS) {
    const value = $(field).value.trim();
    if (value && !(name === "sort" && value === "score")) params.set(name, value);
  }
  params.set("cutoff", $("cutoff").checked ? "auto" : "off");
  return params;
}

function libraryParams() {  // the library takes the photo filters, not the search's sort and cut-off
  const params = filterParams();
  params.delete("sort");
  params.delete("cutoff");
  return params;
}

function pageUrl(extra = {}) {
  const params = new URLSearchParams();
  if (state.mode === "text") {
    params.set("q", state.query);
    if (state.lang) params.set("lang", state.lang);
  } else if (state.mode === "image" && state.imageId !== null) {
    params.set("similar", String(state.imageId));
  } else if (state.mode === "library" && state.month) {
    params.set("month", state.month);
  }
  for (const [key, field] of FILTERS) {
    const value = $(field).value.trim();
    if (value && !(key === "sort" && value === "score")) params.set(key, value);
  }
  if (!$("cutoff").checked) params.set("cutoff", "off");
  for (const [key, value] of Object.entries(extra)) if (value !== null) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : location.pathname;
}

function readUrl() {
  const params = new URLSearchParams(location.search);
  for (const [key, field] of FILTERS) $(field).value = params.get(key) || (key === "sort" ? "score" : "");
  $("cutoff").checked = params.get("cutoff") !== "off";
  state.month = /^[0-9]{4}-[0-9]{2}$/.test(params.get("month") || "") ? params.get("month") : "";
  if (params.get("q")) {
    Object.assign(state, { mode: "text", query: params.get("q"), lang: params.get("lang") || "", imageId: null });
    $("query").value = state.query;
    $("lang").value = state.lang;
  } else if (/^[0-9]+$/.test(params.get("similar") || "")) {
    Object.assign(state, { mode: "image", imageId: Number(params.get("similar")), file: null });
  } else {
    Object.assign(state, { mode: "library", query: "", imageId: null, file: null });
    $("query").value = "";
  }
  // Filters stay folded on a phone (they take a screen), unless one is set: then they show what is applied.
  const anyFilter = FILTERS.some(([key]) => params.get(key) && !(key === "sort" && params.get(key) === "score"));
  $("filters-box").open = anyFilter || params.get("cutoff") === "off" || !PHONE.matches;
  return params.get("photo");
}

async function applyUrl() {
  const photo = readUrl();
  await load();
  if (/^[0-9]+$/.test(photo || "")) openPhoto(Number(photo), false);
  else if ($("detail").open) $("detail").close();
}

// ------------------------------------------------------------------ results
// Capture times are the camera's local time (no zone): written as UTC, they keep their calendar day and hour.
function calendarDate(iso) {
  const [y, m, d] = [Number(iso.slice(0, 4)), Number(iso.slice(5, 7)), Number(iso.slice(8, 10) || 1)];
  const [hh, mm, ss] = [Number(iso.slice(11, 13) || 0), Number(iso.slice(14, 16) || 0), Number(iso.slice(17, 19) || 0)];
  return new Date(Date.UTC(y, m - 1, d, hh, mm, ss));
}

function formatDate(iso, options) {
  return new Intl.DateTimeFormat(i18n.lang, { ...options, timeZone: "UTC" }).format(calendarDate(iso));
}

function shortDate(iso) {
  return iso ? formatDate(iso.slice(0, 10), { dateStyle: "medium" }) : "";
}

function monthLabel(key) {  // "2024-07" → "July 2024", "juillet 2024", "2024年7月"
  return formatDate(`${key}-01`, { month: "long", year: "numeric" });
}

function dayLabel(iso) {  // "2024-07-14…" → "Sunday, July 14, 2024", "dimanche 14 juillet 2024"
  return formatDate(iso.slice(0, 10), { weekday: "long", day: "numeric", month: "long", year: "numeric" });
}

// Where a photo goes in a timeline: its month and day headings. Photos without a capture date come after the
// dated ones (the API orders them by their file's time) under headings that say so.
function timelinePlace(photo) {
  if (photo.date_source === "taken" && photo.date) {
    return { month: photo.date.slice(0, 7), monthText: monthLabel(photo.date.slice(0, 7)),
             day: photo.date.slice(0, 10), dayText: dayLabel(photo.date) };
  }
  if (photo.date_source === "file" && photo.date) {
    const month = `file-${photo.date.slice(0, 7)}`;
    return { month, monthText: t("timeline.fileTime", { month: monthLabel(photo.date.slice(0, 7)) }),
             day: month, dayText: "" };
  }
  return { month: "undated", monthText: t("timeline.undated"), day: "undated", dayText: "" };
}

// The grid a card goes into: one grid per day under its month heading (timelines), or a single grid (best match).
function gridFor(place) {
  const results = $("results");
  if (!place) {
    let grid = results.querySelector(".grid");
    if (!grid) { grid = document.createElement("div"); grid.className = "grid"; results.appendChild(grid); }
    return grid;
  }
  let month = results.lastElementChild;
  if (!month || month.dataset.month !== place.month) {
    month = document.createElement("section");
    month.className = "month";
    month.dataset.month = place.month;
    const heading = document.createElement("h2");
    heading.textContent = place.monthText;
    month.appendChild(heading);
    results.appendChild(month);
  }
  let grid = month.lastElementChild;
  if (!grid.classList.contains("grid") || grid.dataset.day !== place.day) {
    if (place.dayText) {
      const heading = document.createElement("h3");
      heading.className = "day";
      heading.textContent = place.dayText;
      month.appendChild(heading);
    }
    grid = document.createElement("div");
    grid.className = "grid";
    grid.dataset.day = place.day;
    month.appendChild(grid);
  }
  return grid;
}

function makeCard(photo, rank, score) {
  const card = document.createElement("div");
  card.className = "card";
  card.dataset.id = photo.id;
  const open = document.createElement("button");
  open.type = "button";
  open.className = "open";
  const img = document.createElement("img");
  img.src = photo.thumbnail_url;
  img.alt = photo.metadata ? photo.metadata.title || photo.metadata.filename : t("photo", { id: photo.id });
  img.loading = "lazy";
  open.appendChild(img);
  if (rank !== null) {  // a search result: rank, date, score
    const meta = document.createElement("div");
    meta.className = "meta";
    const name = document.createElement("span");
    name.textContent = `#${formatNumber(rank)}`;
    const date = document.createElement("time");
    date.className = "date";
    if (photo.metadata.taken_at) date.dateTime = photo.metadata.taken_at.slice(0, 10);
    date.textContent = shortDate(photo.metadata.taken_at);
    const shown = document.createElement("span");
    shown.className = "score";
    shown.dataset.score = String(score);
    shown.textContent = formatNumber(score, 3);
    meta.append(name, date, shown);
    open.appendChild(meta);
  }
  open.addEventListener("click", () => openPhoto(photo.id, true, photo));
  card.appendChild(open);
  if (photo.stack) card.appendChild(stackBadge(card, photo));
  return card;
}

// A stack of near-duplicates: one card with a count; the badge unfolds the other copies right after it.
function stackBadge(card, photo) {
  const badge = document.createElement("button");
  badge.type = "button";
  badge.className = "stack-badge";
  badge.textContent = t("stack.copies", { count: photo.stack.count });
  badge.title = t("stack.title", { count: photo.stack.count });
  badge.setAttribute("aria-expanded", "false");
  badge.addEventListener("click", () => {
    const open = badge.getAttribute("aria-expanded") === "true";
    badge.setAttribute("aria-expanded", String(!open));
    if (open) {
      for (const member of card.parentElement.querySelectorAll(`.card.member[data-of="${photo.id}"]`)) member.remove();
      return;
    }
    let after = card;
    for (const id of photo.stack.ids.filter((id) => id !== photo.id)) {
      const member = makeCard({ id, thumbnail_url: `/v1/images/${id}/thumbnail`, stack: null,
                                metadata: null, stackOf: photo.stack }, null, null);
      member.classList.add("member");
      member.dataset.of = photo.id;
      member.querySelector("button.open").onclick = (event) => {
        event.stopImmediatePropagation();
        openPhoto(id, true, { id, stack: photo.stack });
      };
      after.after(member);
      after = member;
    }
  });
  return badge;
}

function renderResults(data, append) {
  const results = $("results");
  if (!append) results.replaceChildren();
  const timeline = state.mode === "library" || data.sort === "date";
  for (const hit of data.results) {
    const place = !timeline ? null : state.mode === "library" ? timelinePlace(hit)
      : timelinePlace({ date: hit.metadata.taken_at, date_source: hit.metadata.taken_at ? "taken" : "none" });
    const card = state.mode === "library" ? makeCard(hit, null, null) : makeCard(hit, hit.rank, hit.score);
    gridFor(place).appendChild(card);
  }
  if (state.mode === "library") {
    state.cursor = data.next_cursor;
    $("more").hidden = data.next_cursor === null;
  } else {
    state.offset = data.next_offset;
    $("more").hidden = data.next_offset === null;
  }
}

function hasMore() {
  return state.mode === "library" ? Boolean(state.cursor) : state.offset !== null && state.offset > 0;
}

function shownCount() {
  return $("results").querySelectorAll(".card:not(.member)").length;
}

async function load(append = false) {
  if (state.mode === "library") return runLibrary(append);
  return runSearch(append);
}

// With filters: "13 of 39 photos match the filters", then what is shown of them.
const filtered = (d) => d.matching_images !== null && d.matching_images !== undefined;
const matching = (d) => t("status.filtered", { matching: d.matching_images, count: d.total_images });
const joined = (...parts) => parts.filter(Boolean).join(" · ");

async function runLibrary(append = false) {
  if (state.loading && append) return;
  state.loading = true;
  $("jump-box").hidden = false;
  $("show-all").hidden = true;
  try {
    const params = libraryParams();
    params.set("k", String(state.libraryK));
    if (append) params.set("cursor", state.cursor);
    else if (state.month) params.set("month", state.month);
    if (!append) loadMonths(params);
    const data = await api(`/v1/library?${params}`);
    renderResults(data, append);
    const shown = shownCount();
    if (filtered(data)) setStatus(joined(matching(data), t("status.showing", { count: shown })));
    else if (state.month) {
      setStatus(t("status.libraryMonth", { shown, count: data.total_images, month: monthLabel(state.month) }));
    } else setStatus(t("status.library", { shown, count: data.total_images }));
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    state.loading = false;
  }
  fillScreen();
}

// The jump list: months with photos (under the same filters), grouped by year.
async function loadMonths(params) {
  const query = new URLSearchParams(params);
  query.delete("k");
  query.delete("month");
  try {
    const data = await api(`/v1/library/months?${query}`);
    const select = $("jump");
    select.replaceChildren(new Option(t("jump.newest"), ""));
    let group = null;
    for (const m of data.months) {
      if (!group || group.label !== String(m.year)) {
        group = document.createElement("optgroup");
        group.label = String(m.year);
        select.appendChild(group);
      }
      group.appendChild(new Option(`${monthLabel(m.month_param)} (${formatNumber(m.count)})`, m.month_param));
    }
    select.value = state.month || "";
  } catch (error) {
    setStatus(error.message, true);
  }
}

async function runSearch(append = false) {
  if (state.loading && append) return;
  state.loading = true;
  $("jump-box").hidden = true;
  try {
    let data;
    const params = filterParams();
    params.set("k", String(state.k));
    params.set("offset", String(append ? state.offset : 0));
    params.set("stack", "true");
    if (state.mode === "text") {
      params.set("q", state.query);
      if (state.lang) params.set("lang", state.lang);
      data = await api(`/v1/search?${params}`);
      const l = data.language || {};
      // The language of the last query: tags are shown in it. A query too short to tell (one word, 海辺) is taken
      // to be in the page's language.
      state.detectedLang = l.detected || l.requested || i18n.lang;
      const detected = !l.detected ? ""
        : t(l.supported === false ? "status.unsupported" : "status.detected", { lang: languageName(l.detected) });
      const shown = (append ? shownCount() : 0) + data.results.length;
      const what = t(data.sort === "date" ? "status.standOut" : "status.results", { count: shown, total: data.total_images });
      setStatus(joined(what, detected, filtered(data) ? matching(data) : ""));
    } else {
      const form = new FormData();
      if (state.file) form.append("file", state.file);
      else form.append("image_id", String(state.imageId));
      data = await api(`/v1/search/image?${params}`, { method: "POST", body: form });
      const count = data.results.length + (append ? shownCount() : 0);
      setStatus(joined(t("status.similar", { count }), filtered(data) ? matching(data) : ""));
    }
    renderResults(data, append);
    $("show-all").hidden = !$("cutoff").checked;
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    state.loading = false;
  }
  fillScreen();
}

// Infinite scroll: the next page loads when the end of the grid comes near the viewport. The observer only
// reports changes, so a page that does not fill a tall screen would leave the end in view and never load more
// (1280x900 stopped at 24 of 46): after each page, load the next while the end is still within reach.
const REACH_PX = 400;

function endInReach() {
  return $("sentinel").getBoundingClientRect().top < window.innerHeight + REACH_PX;
}

function fillScreen() {
  requestAnimationFrame(() => {
    if (!state.loading && hasMore() && endInReach()) load(true);
  });
}

if ("IntersectionObserver" in window) {
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && hasMore()) load(true);
  }, { rootMargin: `${REACH_PX}px` }).observe($("sentinel"));
}

// ------------------------------------------------------------------ detail view
// A fact's value: one text, or parts ([text, dir]) each isolated in its own direction (bdi) — a Latin folder, a
// place line that mixes scripts and its coordinates keep their order in a right-to-left page.
function fact(list, label, value) {
  if (value === null || value === undefined || value === "") return;
  const dt = document.createElement("dt");
  dt.textContent = label;
  const dd = document.createElement("dd");
  for (const [index, [text, dir]] of (Array.isArray(value) ? value : [[value, null]]).entries()) {
    const part = document.createElement("bdi");
    if (dir) part.dir = dir;
    part.textContent = text;
    if (index) dd.append(" ");
    dd.appendChild(part);
  }
  list.append(dt, dd);
}

function describeDate(meta) {
  if (!meta.taken_at) return null;
  const text = formatDate(meta.taken_at, { dateStyle: "long", timeStyle: "medium" });
  const offset = meta.taken_offset_minutes;
  if (offset === null || offset === undefined) return text;
  const sign = offset < 0 ? "-" : "+";
  const abs = Math.abs(offset);
  return `${text} (UTC${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")})`;
}

async function openPhoto(id, push, hit = null) {
  if (push) history.pushState(null, "", pageUrl({ photo: String(id) }));
  const dialog = $("detail");
  const image = $("detail-image");
  // A medium-size JPEG made by the server, whatever the format (HEIC, AVIF, camera RAW open in any browser; a
  // 12-Mpx JPEG without its full download); the original file is a link.
  image.onerror = () => {
    image.onerror = null;
    image.src = `/v1/images/${id}/thumbnail`;
  };
  image.src = `/v1/images/${id}/preview`;
  $("detail-original").href = `/v1/images/${id}`;
  $("detail-title").textContent = hit && hit.metadata ? hit.metadata.title || hit.metadata.filename : t("photo", { id });
  showStack(id, hit && hit.stack);
  for (const list of ["detail-facts", "detail-tags", "detail-captions"]) $(list).replaceChildren();
  $("detail-captions-box").hidden = true;
  $("detail-similar").onclick = () => {
    dialog.close();
    Object.assign(state, { mode: "image", imageId: id, file: null });
    history.pushState(null, "", pageUrl());
    runSearch();
  };
  if (!dialog.open) dialog.showModal();
  const wanted = state.lang && (state.captionLanguages || []).includes(state.lang) ? state.lang : null;
  $("detail-lang").textContent = wanted ? `(${wanted})` : "";
  $("detail-tags-lang").textContent = "";
  await Promise.all([showFacts(id), showTags(id, tagLanguage()), showCaptions(id, wanted)]);
}

async function showFacts(id) {
  try {
    const info = await api(`/v1/images/${id}/info?lang=${encodeURIComponent(i18n.lang)}`);
    const meta = info.metadata;
    $("detail-title").textContent = meta.title || meta.filename;
    const facts = $("detail-facts");
    fact(facts, t("fact.taken"), describeDate(meta));
    if (meta.taken_at) facts.lastElementChild.dataset.taken = meta.taken_at;
    fact(facts, t("fact.camera"), [meta.camera_make, meta.camera_model].filter(Boolean).join(" "));
    if (meta.latitude !== null && meta.longitude !== null) {
      const position = `(${meta.latitude.toFixed(5)}, ${meta.longitude.toFixed(5)})`;
      // The server's place line: no part repeated, the country in the page's language (?lang=).
      const names = meta.place || [meta.city, meta.region, meta.country].filter(Boolean).join(", ");
      fact(facts, t("fact.place"), names ? [[names, null], [position, "ltr"]] : [[position, "ltr"]]);
      const nearby = document.createElement("button");
      nearby.id = "detail-nearby";
      nearby.type = "button";
      nearby.textContent = t("detail.nearby", { km: 5 });
      nearby.onclick = () => {  // the place filter, set from this photo's position
        $("near").value = `${meta.latitude.toFixed(5)},${meta.longitude.toFixed(5)},5`;
        $("detail").close();
        newSearch();
      };
      facts.lastElementChild.appendChild(nearby);
    }
    // The folder from the library root (the API never gives the server's path); else the file name alone.
    fact(facts, t("fact.folder"), meta.folder || meta.filename);
    fact(facts, t("fact.size"), t("fact.sizeValue", {
      width: meta.width, height: meta.height, mb: formatNumber(meta.bytes / 1e6, 2) }));
  } catch (error) {
    $("detail-facts").textContent = error.message;
  }
}

// Tags in the language the user chose, else the one their last query was written in; with neither (or one without
// a tag vocabulary) the server answers in the browser's language (Accept-Language), else English.
function tagLanguage() {
  for (const code of [state.lang, state.detectedLang, i18n.lang]) {
    if (code && (state.tagLanguages || []).includes(code)) return code;
  }
  return null;
}

async function showTags(id, lang) {
  const list = $("detail-tags");
  try {
    const query = lang ? `lang=${encodeURIComponent(lang)}&` : "";
    const data = await api(`/v1/images/${id}/tags?${query}k=8`);
    const [code, tags] = Object.entries(data)[0] || [lang, []];
    $("detail-tags-lang").textContent = code ? `(${code})` : "";
    for (const tag of [...tags].sort((a, b) => b.score - a.score)) {
      const item = document.createElement("li");
      item.textContent = tag.tag;
      item.dataset.score = String(tag.score);
      item.title = [tag.english ?? tag.source, tag.concept ?? t("tags.noConcept"), formatNumber(tag.score, 3)].join(" · ");
      list.appendChild(item);
    }
    if (!list.children.length) list.textContent = t("tags.none");
  } catch (error) {
    list.textContent = t("tags.unavailable", { error: error.message });
  }
}

async function showCaptions(id, wanted) {
  const list = $("detail-captions");
  try {
    const langs = wanted ? `&lang=${wanted}` : "";
    const data = await api(`/v1/images/${id}/captions?k=5${langs}`);
    for (const [lang, captions] of Object.entries(data.captions)) {
      for (const caption of captions) {
        const item = document.createElement("li");
        const text = document.createElement("bdi");  // each caption in its own direction, its score after it
        text.textContent = caption.text;
        if (!wanted) item.append(`[${lang}] `);
        item.appendChild(text);
        const score = document.createElement("span");
        score.className = "score";
        score.textContent = formatNumber(caption.score, 3);
        item.appendChild(score);
        list.appendChild(item);
      }
    }
    $("detail-captions-box").hidden = !list.children.length;  // a library without captions: no empty section
  } catch (error) {
    list.textContent = error.message;
    $("detail-captions-box").hidden = false;
  }
}

// Duplicates: a photo of a stack can be marked as the copy to keep (persisted by the server; nothing is deleted).
function showStack(id, stack) {
  const box = $("detail-stack");
  box.hidden = !stack;
  if (!stack) return;
  $("detail-stack-count").textContent = `(${t("stack.copies", { count: stack.count })})`;
  const kept = stack.kept === id;
  $("detail-stack-state").textContent = kept ? t("stack.kept")
    : stack.kept !== null && stack.kept !== undefined ? t("stack.keptOther", { id: stack.kept })
    : t("stack.none");
  const button = $("detail-keep");
  button.textContent = t(kept ? "detail.unmark" : "detail.keep");
  button.onclick = async () => {
    try {
      const answer = await api(`/v1/duplicates/keep/${id}`, { method: kept ? "DELETE" : "PUT" });
      showStack(id, { ...stack, kept: answer.kept ? id : null });
      await load();  // the stack's cover may change
      // Said after the reload, whose photo count would replace it (an error it met stays shown).
      if (!$("status").classList.contains("error")) setStatus(t(answer.kept ? "status.kept" : "status.unkept", { id }));
    } catch (error) {
      setStatus(error.message, true);
    }
  };
}

// Closing the detail view (×, Esc) takes "photo" out of the URL; the back button closes it too (popstate).
$("detail").addEventListener("close", () => {
  if (new URLSearchParams(location.search).has("photo")) history.pushState(null, "", pageUrl());
});

// ------------------------------------------------------------------ input
function searchByFile(file) {
  if (!file) return;
  Object.assign(state, { mode: "image", file, imageId: null });
  setStatus(t("status.searchingFile", { name: file.name }));
  runSearch();
}

function newSearch() {
  if (state.mode === "image" && state.file) { runSearch(); return; }
  if (state.mode === "library") state.month = "";  // new filters: from the newest photo that passes them
  // A new history entry only for a new URL: pressing Enter again (or a filter changed back) must not make the
  // back button step through copies of the page it is on.
  const url = pageUrl();
  if (url !== location.search && url !== location.pathname + location.search) history.pushState(null, "", url);
  load();
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  Object.assign(state, { mode: "text", query: $("query").value.trim(), lang: $("lang").value, imageId: null });
  if (state.query) newSearch();
});
$("lang").addEventListener("change", () => { state.lang = $("lang").value; });
for (const [, field] of FILTERS) $(field).addEventListener("change", newSearch);
$("cutoff").addEventListener("change", newSearch);
$("show-all").addEventListener("click", () => {  // every photo, best first: the cut-off off, one click
  $("cutoff").checked = false;
  newSearch();
});
$("more").addEventListener("click", () => load(true));
$("home").addEventListener("click", (event) => {  // the library, with the filters kept
  event.preventDefault();
  Object.assign(state, { mode: "library", query: "", imageId: null, file: null, month: "" });
  $("query").value = "";
  newSearch();
});
$("jump").addEventListener("change", () => {
  state.month = $("jump").value;
  history.pushState(null, "", pageUrl());
  runLibrary();
  window.scrollTo(0, 0);
});
const drop = $("drop");
drop.addEventListener("click", () => $("file").click());
$("file").addEventListener("change", () => searchByFile($("file").files[0]));
drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (event) => {
  event.preventDefault();
  drop.classList.remove("over");
  searchByFile(event.dataTransfer.files[0]);
});
window.addEventListener("popstate", () => applyUrl());

setLanguage(chooseLanguage())
  .catch(() => setLanguage("en"))
  .then(() => { fillLanguageSelector(); return loadLanguages(); })
  .then(() => { translatePage(); return applyUrl(); })
  .catch((error) => setStatus(t("status.unreachable", { error: error.message }), true));
