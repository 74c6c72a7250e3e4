// Explorers on the website's lesson pages: each control picks a value, the picture shows the frame
// the explorer itself drew at that setting when the site was built (book/frames.py), with that
// setting's alt text and readout (book/frames_html.py writes the figure and its data). No kernel;
// nothing is fetched but the site's own frames.
//
// Why it is quick: every frame of a figure is loaded and decoded (Image.decode) once the figure
// comes near the viewport, so a move only points the <img> at a decoded picture. A move made
// before its frame is ready loads that frame first; a later move overrides an earlier one still
// loading. Each move is recorded (figure.t5Moves: the input event's time, when its frame was
// decoded, swapped in, and two animation frames later, painted; on performance.now()'s clock)
// for the site's browser test.
(() => {
  'use strict';

  function setUp(figure) {
    const data = JSON.parse(figure.querySelector('.t5-frames-data').textContent);
    const img = figure.querySelector('.t5-frames-image');
    const readout = figure.querySelector('.t5-frames-readout code');
    const controls = Array.from(figure.querySelectorAll('[data-t5-control]'));
    const decoded = new Map();  // frame index -> promise of its decoded Image
    let wanted = null;
    figure.t5Moves = [];
    figure.t5Decoded = 0;  // frames decoded so far (the browser test waits for all before timing moves)

    function load(index, priority = 'high') {
      if (!decoded.has(index)) {
        const image = new Image();
        image.fetchPriority = priority;
        image.src = data.frames[index].src;
        decoded.set(index, image.decode().catch(() => image)  // a failed decode still swaps (alt text shows)
          .then(() => { figure.t5Decoded += 1; }).then(() => image));
      }
      return decoded.get(index);
    }

    // The frame index of the controls' values: the last control varies fastest (book/frames.py's grid).
    const current = () => controls.reduce((index, el, k) => index * data.sizes[k] + Number(el.value), 0);

    function showValues() {
      controls.forEach((el, k) => {
        const text = data.values[k][Number(el.value)];
        if (el.type === 'range') {
          el.setAttribute('aria-valuetext', text);
          el.nextElementSibling.textContent = text;  // its <output>
        }
      });
    }

    async function move(event) {
      const index = current();
      wanted = index;
      showValues();
      await load(index);
      const loaded = performance.now();
      if (wanted !== index) return;  // a later move won
      const frame = data.frames[index];
      img.src = frame.src;
      img.alt = frame.alt;
      readout.textContent = frame.readout;
      const swapped = performance.now();
      // Two animation frames later the frame holding the new picture has been painted.
      requestAnimationFrame(() => requestAnimationFrame(() => {
        figure.t5Moves.push({index, input: event.timeStamp, loaded, swapped, painted: performance.now()});
      }));
    }

    controls.forEach((el) => el.addEventListener('input', move));
    const preload = () => data.frames.forEach((_, index) => load(index, 'low'));  // after any frame a move asked for
    if ('IntersectionObserver' in window) {
      const watcher = new IntersectionObserver((entries) => {
        if (entries.some((e) => e.isIntersecting)) {
          watcher.disconnect();
          preload();
        }
      }, {rootMargin: '800px 0px'});
      watcher.observe(figure);
    } else {
      preload();
    }
    controls.forEach((el) => el.addEventListener('focus', preload, {once: true}));
  }

  // Inline after the page's first figure (book/frames_html.py): the figures parsed so far now,
  // any later on the page once the document is parsed.
  function setUpAll() {
    document.querySelectorAll('figure.t5-frames:not([data-t5-ready])').forEach((figure) => {
      setUp(figure);
      figure.dataset.t5Ready = '';
    });
  }
  setUpAll();
  performance.mark('t5-frames-ready');  // the first explorer answers from here on (the site's browser test reads it)
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', setUpAll);
})();
