// berth dashboard: keeps a page live from its change stream, follows a
// pod's logs, and draws the nodes' usage. No inline script: the CSP
// allows only this file.
(function () {
  'use strict';
  var live = document.getElementById('live');
  var conn = document.getElementById('conn');
  var es = null;

  function say(msg) { if (conn) conn.textContent = msg; }

  function connect() {
    if (!live || !live.dataset.stream || !window.EventSource) return;
    if (es) es.close();
    var s = live.dataset.stream;
    es = new EventSource(s + (s.indexOf('?') < 0 ? '?' : '&') + 'rv=' + encodeURIComponent(live.dataset.rv || '0'));
    es.addEventListener('open', function () { say(''); });
    es.addEventListener('change', function () { refresh(); });
    es.addEventListener('reset', function () { es.close(); refresh().then(connect); });
    es.addEventListener('error', function () {
      if (es.readyState === EventSource.CLOSED) {
        say('Live updates stopped; checking the session…');
        refresh().then(function () { setTimeout(connect, 2000); });
      } else {
        say('Live updates interrupted; reconnecting…');
      }
    });
  }

  var busy = false, again = false;
  // refresh reads the page again and puts its live part in place, keeping
  // the focus on the element that had it.
  function refresh() {
    if (busy) { again = true; return Promise.resolve(); }
    busy = true;
    var focused = document.activeElement && live.contains(document.activeElement) ? focusKey(document.activeElement) : null;
    return fetch(location.href, { credentials: 'same-origin', headers: { 'Accept': 'text/html' } })
      .then(function (r) {
        if (r.redirected && r.url.indexOf('/ui/login') >= 0) { location.assign(r.url); return null; }
        return r.text();
      })
      .then(function (html) {
        if (html === null) return;
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var m = doc.getElementById('live');
        if (!m) return;
        live.replaceChildren.apply(live, Array.prototype.map.call(m.childNodes, function (n) { return document.importNode(n, true); }));
        live.dataset.rv = m.dataset.rv || live.dataset.rv;
        if (focused) restoreFocus(focused);
        charts();
        say('');
      })
      .catch(function (e) { say('Update failed: ' + e.message); })
      .then(function () {
        busy = false;
        if (again) { again = false; return refresh(); }
      });
  }

  function focusKey(el) { return el.id ? '#' + CSS.escape(el.id) : (el.getAttribute('href') ? 'a[href="' + CSS.escape(el.getAttribute('href')) + '"]' : null); }
  function restoreFocus(sel) { var el = live.querySelector(sel); if (el) el.focus({ preventScroll: true }); }

  // Logs: a stream of "line" events, restarted when the controls change.
  var logs = document.getElementById('logs');
  if (logs) {
    var pre = document.getElementById('log-lines');
    var note = document.getElementById('log-note');
    var form = logs.querySelector('form');
    var les = null;
    var maxLines = 5000;
    var startLogs = function () {
      if (les) les.close();
      pre.textContent = '';
      note.textContent = 'Connecting…';
      var f = new FormData(form);
      var q = new URLSearchParams();
      q.set('container', f.get('container') || '');
      q.set('follow', f.get('follow') ? 'true' : 'false');
      q.set('previous', f.get('previous') ? 'true' : 'false');
      les = new EventSource(logs.dataset.logs + '?' + q.toString());
      les.addEventListener('open', function () { note.textContent = f.get('follow') ? 'Following.' : ''; });
      les.addEventListener('line', function (e) {
        var stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        pre.appendChild(document.createTextNode(e.data + '\n'));
        while (pre.childNodes.length > maxLines) pre.removeChild(pre.firstChild);
        if (stick) pre.scrollTop = pre.scrollHeight;
      });
      les.addEventListener('failure', function (e) { note.textContent = e.data; });
      les.addEventListener('end', function (e) {
        les.close();
        if (!note.textContent || note.textContent === 'Following.') note.textContent = e.data + '.';
      });
    };
    form.addEventListener('submit', function (e) { e.preventDefault(); startLogs(); });
    form.addEventListener('change', startLogs);
    startLogs();
  }

  // Usage history of the nodes, kept for this tab while it is open.
  function charts() {
    var rows = document.querySelectorAll('tr[data-node][data-has-usage="true"]');
    var now = Date.now();
    rows.forEach(function (row) {
      var name = row.dataset.node, key = 'berth-usage:' + name;
      var h = [];
      try { h = JSON.parse(sessionStorage.getItem(key) || '[]'); } catch (e) { h = []; }
      var last = h[h.length - 1];
      if (!last || now - last.t > 5000) h.push({ t: now, c: +row.dataset.cpu, m: +row.dataset.mem });
      h = h.slice(-60);
      sessionStorage.setItem(key, JSON.stringify(h));
      var box = document.querySelector('[data-chart="' + CSS.escape(name) + '"]');
      if (box) draw(box, h);
    });
  }
  var NS = 'http://www.w3.org/2000/svg';
  function draw(box, h) {
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('viewBox', '0 0 600 48');
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.setAttribute('role', 'img');
    var title = document.createElementNS(NS, 'title');
    var cur = h[h.length - 1] || { c: 0, m: 0 };
    title.textContent = 'CPU ' + cur.c + '% (blue), memory ' + cur.m + '% (green), last ' + h.length + ' samples';
    svg.appendChild(title);
    [['c', 'cpu'], ['m', 'mem']].forEach(function (p) {
      var line = document.createElementNS(NS, 'polyline');
      var step = h.length > 1 ? 600 / (h.length - 1) : 0;
      line.setAttribute('points', h.map(function (s, i) { return (i * step).toFixed(1) + ',' + (47 - Math.min(100, s[p[0]]) * 0.46).toFixed(1); }).join(' '));
      line.setAttribute('class', p[1]);
      svg.appendChild(line);
    });
    box.replaceChildren(svg);
  }

  charts();
  connect();
})();
