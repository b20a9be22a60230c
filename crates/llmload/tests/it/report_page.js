// Measures report.html as Chromium lays it out and writes the facts, as JSON, into <pre id="facts">:
// the legend of Where the time goes, the case ids, the smallest chart and page text as rendered,
// the GPU section, and what overflows. tests/it/report_page.rs injects it into a copy of the page.
(() => {
  const box = e => e.getBoundingClientRect();
  const overlap = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const facts = {width: window.innerWidth, page_overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth};
  const fig = document.getElementById('phases-bars');
  if (fig) {
    const entries = [...fig.querySelectorAll('.legend li')];
    const rects = entries.map(box);
    let overlaps = 0;
    for (let i = 0; i < rects.length; i++) for (let j = i + 1; j < rects.length; j++) if (overlap(rects[i], rects[j])) overlaps++;
    const figBox = box(fig);
    facts.legend_entries = entries.map(e => e.className.replace('legend-', ''));
    facts.legend_overlaps = overlaps;
    facts.legend_outside = rects.filter(r => r.left < figBox.left - 0.5 || r.right > figBox.right + 0.5).length;
    facts.segments = [...new Set([...fig.querySelectorAll('.phase-bar rect')].map(r => r.getAttribute('class')))];
    const svg = box(fig.querySelector('svg'));
    const ids = [...fig.querySelectorAll('text.case-id')];
    facts.case_ids = ids.map(t => t.textContent);
    facts.case_ids_outside = ids.map(box).filter(r => r.left < svg.left - 0.5 || r.right > svg.right + 0.5).length;
  }
  let smallest = 1e9, where = '';
  for (const svg of document.querySelectorAll('figure svg')) {
    const vb = svg.viewBox && svg.viewBox.baseVal;
    const scale = vb && vb.width ? box(svg).width / vb.width : 1;
    for (const t of svg.querySelectorAll('text')) {
      if (!t.textContent.trim()) continue;
      const px = parseFloat(getComputedStyle(t).fontSize) * scale;
      if (px < smallest) { smallest = px; where = t.textContent; }
    }
  }
  facts.chart_text_px = smallest;
  facts.chart_text_smallest = where;
  let cells = 1e9;
  for (const c of document.querySelectorAll('td, th, figcaption, .note')) cells = Math.min(cells, parseFloat(getComputedStyle(c).fontSize));
  facts.page_text_px = cells;
  const none = document.getElementById('no-telemetry');
  facts.no_telemetry_px = none ? box(none).height : null;
  const h = [...document.querySelectorAll('h3')].find(e => e.textContent === 'GPU telemetry over time');
  facts.gpu_svg = !!(h && h.parentElement.tagName === 'FIGURE' && h.parentElement.querySelector('svg'));
  facts.tables_scrolling = [...document.querySelectorAll('.wide')].filter(w => w.scrollWidth > w.clientWidth).length;
  const pre = document.createElement('pre');
  pre.id = 'facts';
  pre.textContent = JSON.stringify(facts);
  document.body.appendChild(pre);
})();
