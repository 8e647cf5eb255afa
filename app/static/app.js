// Polyglot Image Search page: plain JS against the /v1 API, no build step.
// The query, its filters, a "similar to" photo and an open photo live in the URL (?q=…&lang=…&after=…&photo=42):
// a page can be shared or reloaded, and the back button steps through searches and closes the detail view.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { mode: null, query: "", lang: "", detectedLang: "", imageId: null, file: null, offset: 0, k: 24, loading: false };
const FILTERS = [  // URL parameter, form field, API parameter
  ["after", "taken-after", "taken_after"],
  ["before", "taken-before", "taken_before"],
  ["folder", "folder", "folder"],
  ["near", "near", "near"],
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
function filterParams() {
  const params = new URLSearchParams();
  for (const [, field, name] of FILTERS) {
    const value = $(field).value.trim();
    if (value && !(name === "sort" && value === "score")) params.set(name, value);
  }
  if ($("cutoff").checked) params.set("cutoff", "auto");
  return params;
}

function pageUrl(extra = {}) {
  const params = new URLSearchParams();
  if (state.mode === "text") {
    params.set("q", state.query);
    if (state.lang) params.set("lang", state.lang);
  } else if (state.mode === "image" && state.imageId !== null) {
    params.set("similar", String(state.imageId));
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
  if (params.get("q")) {
    Object.assign(state, { mode: "text", query: params.get("q"), lang: params.get("lang") || "", imageId: null });
    $("query").value = state.query;
    $("lang").value = state.lang;
  } else if (/^[0-9]+$/.test(params.get("similar") || "")) {
    Object.assign(state, { mode: "image", imageId: Number(params.get("similar")), file: null });
  } else {
    state.mode = null;
  }
  return params.get("photo");
}

async function applyUrl() {
  const photo = readUrl();
  if (state.mode) await runSearch();
  else { $("results").replaceChildren(); setStatus(""); }
  if (/^[0-9]+$/.test(photo || "")) openPhoto(Number(photo), false);
  else if ($("detail").open) $("detail").close();
}

// ------------------------------------------------------------------ results
function shortDate(iso) {
  return iso ? iso.slice(0, 10) : "";
}

function renderResults(data, append) {
  const grid = $("results");
  if (!append) grid.replaceChildren();
  for (const hit of data.results) {
    const card = document.createElement("button");
    card.className = "card";
    card.dataset.id = hit.id;
    const img = document.createElement("img");
    img.src = hit.thumbnail_url;
    img.alt = hit.metadata.title || hit.metadata.filename;
    img.loading = "lazy";
    const meta = document.createElement("div");
    meta.className = "meta";
    const name = document.createElement("span");
    name.textContent = `#${hit.rank}`;
    const date = document.createElement("span");
    date.className = "date";
    date.textContent = shortDate(hit.metadata.taken_at);
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hit.score.toFixed(3);
    meta.append(name, date, score);
    card.append(img, meta);
    card.addEventListener("click", () => openPhoto(hit.id, true, hit));
    grid.appendChild(card);
  }
  state.offset = data.next_offset;
  $("more").hidden = data.next_offset === null;
}

async function runSearch(append = false) {
  if (state.loading && append) return;
  state.loading = true;
  try {
    let data;
    const params = filterParams();
    params.set("k", String(state.k));
    params.set("offset", String(append ? state.offset : 0));
    const matching = (d) => (d.matching_images !== null && d.matching_images !== undefined
      ? ` · ${d.matching_images} match the filters` : "");
    if (state.mode === "text") {
      params.set("q", state.query);
      if (state.lang) params.set("lang", state.lang);
      data = await api(`/v1/search?${params}`);
      const l = data.language || {};
      state.detectedLang = l.detected || "";  // the language of the last query: tags are shown in it
      const detected = l.detected ? ` · detected ${l.detected}${l.supported === false ? " (not supported)" : ""}` : "";
      const shown = (append ? $("results").children.length : 0) + data.results.length;
      setStatus(`${shown} results of ${data.total_images} images${detected}${matching(data)}`);
    } else {
      const form = new FormData();
      if (state.file) form.append("file", state.file);
      else form.append("image_id", String(state.imageId));
      data = await api(`/v1/search/image?${params}`, { method: "POST", body: form });
      setStatus(`${data.results.length + (append ? $("results").children.length : 0)} visually similar images${matching(data)}`);
    }
    renderResults(data, append);
  } catch (error) {
    setStatus(error.message, true);
  } finally {
    state.loading = false;
  }
}

// Infinite scroll: the next page loads when the end of the grid comes into view ("More results" stays as a
// fallback for browsers without IntersectionObserver).
if ("IntersectionObserver" in window) {
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting) && state.mode && state.offset !== null && state.offset > 0) {
      runSearch(true);
    }
  }, { rootMargin: "400px" }).observe($("sentinel"));
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
  // A file the browser cannot show (camera RAW, HEIC) or the server will not serve as it is: its thumbnail.
  image.onerror = () => {
    image.onerror = null;
    image.src = `/v1/images/${id}/thumbnail`;
  };
  image.src = `/v1/images/${id}`;
  $("detail-title").textContent = hit ? hit.metadata.title || hit.metadata.filename : `photo ${id}`;
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
      fact(facts, "Place", `${meta.latitude.toFixed(5)}, ${meta.longitude.toFixed(5)}`);
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
      item.title = `${tag.source} · ${tag.score.toFixed(3)}`;
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
  if (!state.mode) return;
  // A new history entry only for a new URL: pressing Enter again (or a filter changed back) must not make the
  // back button step through copies of the page it is on.
  const url = pageUrl();
  if (url !== location.search && url !== location.pathname + location.search) history.pushState(null, "", url);
  runSearch();
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  Object.assign(state, { mode: "text", query: $("query").value.trim(), lang: $("lang").value, imageId: null });
  if (state.query) newSearch();
});
$("lang").addEventListener("change", () => { state.lang = $("lang").value; });
for (const [, field] of FILTERS) $(field).addEventListener("change", newSearch);
$("cutoff").addEventListener("change", newSearch);
$("more").addEventListener("click", () => runSearch(true));
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
