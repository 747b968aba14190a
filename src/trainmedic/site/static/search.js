// Offline search for the trainmedic encyclopedia: progressive enhancement, pages read fine without it.
// The data comes from the JSON blob inlined in index.html (fetch() does not work on file://).
// A query is either words (matched against ids, titles, tags and text) or a pasted log line
// (matched against every cause's fingerprints, the same regexes `trainmedic diagnose` uses).
(function () {
  "use strict";
  var blob = document.getElementById("search-data");
  var input = document.getElementById("q");
  var box = document.getElementById("search");
  var list = document.getElementById("results");
  var status = document.getElementById("search-status");
  if (!blob || !input || !box || !list || !status) { return; }

  var docs = JSON.parse(blob.textContent).docs;
  docs.forEach(function (d) {
    d.hay = [d.id, d.title, d.tags.join(" "), d.category, d.words, d.text].join(" ").toLowerCase();
    d.head = (d.id + " " + d.title).toLowerCase();
    d.regexes = [];
    d.fingerprints.forEach(function (f) {
      try {
        d.regexes.push({ id: f.id, re: new RegExp(f.regex, f.ignore_case ? "i" : "") });
      } catch (e) { /* a Python-only construct: word search still finds the cause */ }
    });
  });

  function score(d, query, words) {
    var s = 0;
    var hit = null;
    // A phrase people paste for this cause ("Bus error"): the cause the library says it means comes first.
    // The phrase alone outranks a fingerprint it happens to satisfy too (a shell's bare "Bus error");
    // a whole pasted line is judged by the fingerprints.
    var lower = query.toLowerCase();
    for (var k = 0; k < d.phrases.length; k++) {
      if (lower === d.phrases[k]) { s += 200; break; }
      if (lower.indexOf(d.phrases[k]) >= 0) { s += 60; break; }
    }
    for (var i = 0; i < d.regexes.length; i++) {
      if (d.regexes[i].re.test(query)) { hit = d.regexes[i].id; s += 100; break; }
    }
    var all = words.length > 0;
    words.forEach(function (w) {
      if (d.head.indexOf(w) >= 0) { s += 10; } else if (d.hay.indexOf(w) >= 0) { s += 2; } else { all = false; }
    });
    if (!hit && !all && s === 0) { return null; }
    return { doc: d, score: s, hit: hit };
  }

  function render(query) {
    while (list.firstChild) { list.removeChild(list.firstChild); }
    var q = query.trim();
    if (!q) { box.hidden = true; return; }
    var words = q.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 1; });
    var found = [];
    docs.forEach(function (d) {
      var r = score(d, q, words);
      if (r) { found.push(r); }
    });
    found.sort(function (a, b) {
      return b.score - a.score || b.doc.prior - a.doc.prior || a.doc.id.localeCompare(b.doc.id);
    });
    status.textContent = found.length ? found.length + " match" + (found.length === 1 ? "" : "es") : "No match. Try fewer words, or paste the exact error line.";
    found.slice(0, 25).forEach(function (r) {
      var li = document.createElement("li");
      var kind = document.createElement("span");
      kind.className = "kind";
      kind.textContent = r.doc.kind === "cause" ? "cause · " + r.doc.role : "entry";
      var a = document.createElement("a");
      a.href = r.doc.url;
      a.textContent = r.doc.title;
      var sub = document.createElement("span");
      sub.className = "hit";
      if (r.hit) {
        var m = document.createElement("span");
        m.className = "matched";
        m.textContent = "your line matches fingerprint " + r.hit + " · ";
        sub.appendChild(m);
      }
      sub.appendChild(document.createTextNode(r.doc.id));
      li.appendChild(kind);
      li.appendChild(a);
      li.appendChild(sub);
      list.appendChild(li);
    });
    box.hidden = false;
  }

  var timer = null;
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(function () { render(input.value); }, 80);
  });
  input.form.addEventListener("submit", function (ev) { ev.preventDefault(); render(input.value); });
  var initial = new URLSearchParams(window.location.search).get("q");
  if (initial) { input.value = initial; render(initial); }
})();
