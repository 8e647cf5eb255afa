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

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").classList.toggle("error", isError);
}

async function api(path, options = {}) {
  const response = await fetch(path, options);
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
    option.textContent = `${info.names[code] || code} (${code})`;
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
  if ($("cutoff").checked) params.set("cutoff", "auto");
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
  if ($("cutoff").checked) params.set("cutoff", "auto");
  for (const [key, value] of Object.entries(extra)) if (value !== null) params.set(key, value);
  const text = params.toString();
  return text ? `?${text}` : location.pathname;
}

function readUrl() {
  const params = new URLSearchParams(location.search);
  for (const [key, field] of FILTERS) $(field).value = params.get(key) || (key === "sort" ? "score" : "");
  $("cutoff").checked = params.get("cutoff") === "auto";
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
  $("filters-box").open = anyFilter || params.get("cutoff") === "auto" || !PHONE.matches;
  return params.get("photo");
}

async function applyUrl() {
  const photo = readUrl();
  await load();
  if (/^[0-9]+$/.test(photo || "")) openPhoto(Number(photo), false);
  else if ($("detail").open) $("detail").close();
}

// ------------------------------------------------------------------ results
function shortDate(iso) {
  return iso ? iso.slice(0, 10) : "";
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
  "November", "December"];
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

function monthLabel(key) {  // "2024-07" → "July 2024"
  return `${MONTHS[Number(key.slice(5, 7)) - 1]} ${key.slice(0, 4)}`;
}

function dayLabel(iso) {  // "2024-07-14…" → "Sunday 14 July 2024" (the calendar day, no time zone involved)
  const [y, m, d] = [Number(iso.slice(0, 4)), Number(iso.slice(5, 7)), Number(iso.slice(8, 10))];
  const weekday = WEEKDAYS[new Date(Date.UTC(y, m - 1, d)).getUTCDay()];
  return `${weekday} ${d} ${MONTHS[m - 1]} ${y}`;
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
    return { month, monthText: `No capture date · file time ${monthLabel(photo.date.slice(0, 7))}`,
             day: month, dayText: "" };
  }
  return { month: "undated", monthText: "No capture date", day: "undated", dayText: "" };
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
  img.alt = photo.metadata ? photo.metadata.title || photo.metadata.filename : `photo ${photo.id}`;
  img.loading = "lazy";
  open.appendChild(img);
  if (rank !== null) {  // a search result: rank, date, score
    const meta = document.createElement("div");
    meta.className = "meta";
    const name = document.createElement("span");
    name.textContent = `#${rank}`;
    const date = document.createElement("span");
    date.className = "date";
    date.textContent = shortDate(photo.metadata.taken_at);
    const shown = document.createElement("span");
    shown.className = "score";
    shown.textContent = score.toFixed(3);
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
  badge.textContent = `${photo.stack.count} copies`;
  badge.title = `${photo.stack.count} near-duplicates of this shot: show them`;
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

const matching = (d) => (d.matching_images !== null && d.matching_images !== undefined
  ? ` · ${d.matching_images} match the filters` : "");

async function runLibrary(append = false) {
  if (state.loading && append) return;
  state.loading = true;
  $("jump-box").hidden = false;
  try {
    const params = libraryParams();
    params.set("k", String(state.libraryK));
    if (append) params.set("cursor", state.cursor);
    else if (state.month) params.set("month", state.month);
    if (!append) loadMonths(params);
    const data = await api(`/v1/library?${params}`);
    renderResults(data, append);
    const from = state.month ? ` from ${monthLabel(state.month)}` : "";
    setStatus(`${shownCount()} of ${data.total_images} photos, newest first${from}${matching(data)}`);
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
    select.replaceChildren(new Option("newest", ""));
    let group = null;
    for (const m of data.months) {
      if (!group || group.label !== String(m.year)) {
        group = document.createElement("optgroup");
        group.label = String(m.year);
        select.appendChild(group);
      }
      group.appendChild(new Option(`${monthLabel(m.month_param)} (${m.count})`, m.month_param));
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
      state.detectedLang = l.detected || "";  // the language of the last query: tags are shown in it
      const detected = l.detected ? ` · detected ${l.detected}${l.supported === false ? " (not supported)" : ""}` : "";
      const shown = (append ? shownCount() : 0) + data.results.length;
      const what = data.sort === "date" ? `${shown} of ${data.total_images} images stand out, newest first`
        : `${shown} results of ${data.total_images} images`;
      setStatus(`${what}${detected}${matching(data)}`);
    } else {
      const form = new FormData();
      if (state.file) form.append("file", state.file);
      else form.append("image_id", String(state.imageId));
      data = await api(`/v1/search/image?${params}`, { method: "POST", body: form });
      setStatus(`${data.results.length + (append ? shownCount() : 0)} visually similar images${matching(data)}`);
    }
    renderResults(data, append);
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
function fact(list, label, value) {
  if (value === null || value === undefined || value === "") return;
  const dt = document.createElement("dt");
  dt.textContent = label;
  const dd = document.createElement("dd");
  dd.textContent = value;
  list.append(dt, dd);
}

function describeDate(meta) {
  if (!meta.taken_at) return null;
  const text = meta.taken_at.replace("T", " ").slice(0, 19);
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
  $("detail-title").textContent = hit && hit.metadata ? hit.metadata.title || hit.metadata.filename : `photo ${id}`;
  showStack(id, hit && hit.stack);
  for (const list of ["detail-facts", "detail-tags", "detail-captions"]) $(list).replaceChildren();
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
    const info = await api(`/v1/images/${id}/info`);
    const meta = info.metadata;
    $("detail-title").textContent = meta.title || meta.filename;
    const facts = $("detail-facts");
    fact(facts, "Taken", describeDate(meta));
    fact(facts, "Camera", [meta.camera_make, meta.camera_model].filter(Boolean).join(" "));
    if (meta.latitude !== null && meta.longitude !== null) {
      const position = `${meta.latitude.toFixed(5)}, ${meta.longitude.toFixed(5)}`;
      const names = [meta.city, meta.region, meta.country].filter(Boolean).join(", ");
      fact(facts, "Place", names ? `${names} (${position})` : position);
      const nearby = document.createElement("button");
      nearby.id = "detail-nearby";
      nearby.type = "button";
      nearby.textContent = "photos within 5 km";
      nearby.onclick = () => {  // the place filter, set from this photo's position
        $("near").value = `${meta.latitude.toFixed(5)},${meta.longitude.toFixed(5)},5`;
        $("detail").close();
        newSearch();
      };
      facts.lastElementChild.appendChild(nearby);
    }
    fact(facts, "Folder", meta.folder);
    fact(facts, "Size", `${meta.width} × ${meta.height} px, ${(meta.bytes / 1e6).toFixed(2)} MB`);
  } catch (error) {
    $("detail-facts").textContent = error.message;
  }
}

// Tags in the language the user chose, else the one their last query was written in; with neither (or one without
// a tag vocabulary) the server answers in the browser's language (Accept-Language), else English.
function tagLanguage() {
  for (const code of [state.lang, state.detectedLang]) {
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
      item.title = `${tag.english ?? tag.source} · ${tag.concept ?? "no concept"} · ${tag.score.toFixed(3)}`;
      list.appendChild(item);
    }
    if (!list.children.length) list.textContent = "No tags.";
  } catch (error) {
    list.textContent = `No tags in this language (${error.message})`;
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
        item.textContent = `${wanted ? "" : `[${lang}] `}${caption.text}`;
        const score = document.createElement("span");
        score.className = "score";
        score.textContent = caption.score.toFixed(3);
        item.appendChild(score);
        list.appendChild(item);
      }
    }
    if (!list.children.length) list.textContent = "No captions indexed.";
  } catch (error) {
    list.textContent = error.message;
  }
}

// Duplicates: a photo of a stack can be marked as the copy to keep (persisted by the server; nothing is deleted).
function showStack(id, stack) {
  const box = $("detail-stack");
  box.hidden = !stack;
  if (!stack) return;
  $("detail-stack-count").textContent = `(${stack.count} copies)`;
  const kept = stack.kept === id;
  $("detail-stack-state").textContent = kept ? "This is the copy to keep."
    : stack.kept !== null && stack.kept !== undefined ? `Photo ${stack.kept} is the copy to keep.`
    : "No copy is marked to keep yet.";
  const button = $("detail-keep");
  button.textContent = kept ? "Unmark" : "Keep this copy";
  button.onclick = async () => {
    try {
      const answer = await api(`/v1/duplicates/keep/${id}`, { method: kept ? "DELETE" : "PUT" });
      showStack(id, { ...stack, kept: answer.kept ? id : null });
      setStatus(answer.kept ? `photo ${id} is the copy to keep` : `photo ${id}: keep mark taken off`);
      load();  // the stack's cover may change
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
  setStatus(`searching images like ${file.name}…`);
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

loadLanguages()
  .then(() => applyUrl())
  .catch((error) => setStatus(`cannot reach the API: ${error.message}`, true));
