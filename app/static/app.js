// Polyglot Image Search page: plain JS against the /v1 API, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { mode: null, query: "", lang: "", imageId: null, file: null, offset: 0, k: 24 };

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
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hit.score.toFixed(3);
    meta.append(name, score);
    card.append(img, meta);
    card.addEventListener("click", () => showDetail(hit));
    grid.appendChild(card);
  }
  $("more").hidden = data.next_offset === null;
  state.offset = data.next_offset;
}

async function runSearch(append = false) {
  try {
    let data;
    const page = `k=${state.k}&offset=${append ? state.offset : 0}`;
    if (state.mode === "text") {
      const lang = state.lang ? `&lang=${encodeURIComponent(state.lang)}` : "";
      data = await api(`/v1/search?q=${encodeURIComponent(state.query)}${lang}&${page}`);
      const l = data.language || {};
      const detected = l.detected ? ` · detected ${l.detected}${l.supported === false ? " (not supported)" : ""}` : "";
      setStatus(`${data.results.length} results of ${data.total_images} images${detected}`);
    } else {
      const form = new FormData();
      if (state.file) form.append("file", state.file);
      else form.append("image_id", String(state.imageId));
      data = await api(`/v1/search/image?${page}`, { method: "POST", body: form });
      setStatus(`${data.results.length} visually similar images`);
    }
    renderResults(data, append);
  } catch (error) {
    setStatus(error.message, true);
  }
}

async function showDetail(hit) {
  $("detail-image").src = hit.image_url;
  $("detail-title").textContent = hit.metadata.title || hit.metadata.filename;
  const list = $("detail-captions");
  list.replaceChildren();
  const wanted = state.lang && (state.captionLanguages || []).includes(state.lang) ? state.lang : null;
  $("detail-lang").textContent = wanted ? `(${wanted})` : "";
  $("detail-similar").onclick = () => {
    $("detail").close();
    Object.assign(state, { mode: "image", imageId: hit.id, file: null });
    runSearch();
  };
  $("detail").showModal();
  try {
    const langs = wanted ? `&lang=${wanted}` : "";
    const data = await api(`/v1/images/${hit.id}/captions?k=5${langs}`);
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

function searchByFile(file) {
  if (!file) return;
  Object.assign(state, { mode: "image", file, imageId: null });
  setStatus(`searching images like ${file.name}…`);
  runSearch();
}

$("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  Object.assign(state, { mode: "text", query: $("query").value.trim(), lang: $("lang").value });
  if (state.query) runSearch();
});
$("lang").addEventListener("change", () => { state.lang = $("lang").value; });
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

loadLanguages().catch((error) => setStatus(`cannot reach the API: ${error.message}`, true));
