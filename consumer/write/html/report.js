/* rasp report page, main script (consumer/write/write-html.c embeds it after the report's JSON):
 * draws the header and every note, a chart of live bytes over time (an input with free
 * events), a flame graph of estimated bytes (root at the top, a
 * node's width its share of the estimate; click to zoom, search to highlight, hover for the
 * figures) and the per-type table. Every name in the data (types, functions, processes,
 * inputs, notes) is untrusted text from a trace: it reaches the page through textContent
 * only, never as markup. The view (zoom, search) lives in the URL's fragment, so Back undoes
 * a zoom and a link shows the same view of the same file. Written for rasp: no library. */
(function () {
	'use strict';

	/* A node of data.nodes, in pre-order (parents before children, children largest first). */
	const PARENT = 0, KIND = 1, NAME = 2, DETAIL = 3, SAMPLES = 4, BYTES = 5, BYTES_LOW = 6,
		BYTES_HIGH = 7, OBJECTS = 8, OBJECTS_LOW = 9, OBJECTS_HIGH = 10, BAD = 11, LOW = 12;
	const KINDS = ['all', 'process', 'thread', 'function', 'no stack', 'type', 'kind'];
	const K_ROOT = 0, K_FRAME = 3, K_NO_STACK = 4, K_TYPE = 5;
	const LEVEL_PX = 18;
	/* Narrower nodes are not drawn (nor anything under them): a page of 10^5 nodes stays
	 * a few thousand elements at any zoom. */
	const MIN_PX = 1;

	const data = JSON.parse(document.getElementById('rasp-data').textContent);
	const root = document.getElementById('rasp-report');
	const strings = data.strings;
	const nodes = data.nodes;
	const n = nodes.length;

	function el(tag, cls, text) {
		const e = document.createElement(tag);

		if (cls)
			e.className = cls;
		if (text !== undefined)
			e.textContent = text;
		return e;
	}

	/* Human units, as the text report prints them (consumer/write/format.c): three or four
	 * significant digits, exact below the first unit. */
	function human(v, base, units, exactMax) {
		let u = 0, a, s;

		if (v === null || v === undefined || !isFinite(v))
			return '-';
		a = Math.abs(v);
		while (a >= base * 0.9995 && u + 1 < units.length) {
			a /= base;
			v /= base;
			u++;
		}
		if (u === 0 && a < exactMax && v === Math.floor(v))
			s = v.toFixed(0) + ' ' + units[0];
		else if (a < 9.995)
			s = v.toFixed(2) + ' ' + units[u];
		else if (a < 99.95)
			s = v.toFixed(1) + ' ' + units[u];
		else if (a < 1e6)
			s = v.toFixed(0) + ' ' + units[u];
		else
			s = v.toPrecision(3) + ' ' + units[u];
		return s.trim();
	}
	const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
	const COUNT_UNITS = ['', 'k', 'M', 'G', 'T', 'P', 'E'];
	function bytes(v) {
		return human(v, 1024, BYTE_UNITS, 1024);
	}
	function count(v) {
		return human(v, 1000, COUNT_UNITS, 1000);
	}
	function percent(share) {
		return isFinite(share) ? (100 * share).toFixed(1) + '%' : '-';
	}

	/* "!" when the samples contradict the sampling model, else "~" under data.few samples:
	 * the text report's marks. */
	function mark(samples, bad) {
		return bad ? '!' : samples < data.few ? '~' : '';
	}
	/* The objects interval's: "?" when too few samples for the spread of sizes. */
	function objectsMark(samples, bad, low) {
		return !bad && low ? '?' : mark(samples, bad);
	}

	/* "97.5 - 109.8 MiB" when both ends share a unit, as the text report writes it. */
	function interval(lo, hi, isBytes, m) {
		const a = isBytes ? bytes(lo) : count(lo), b = isBytes ? bytes(hi) : count(hi);
		const ua = a.lastIndexOf(' '), ub = b.lastIndexOf(' ');

		if (ua >= 0 && ub >= 0 && a.slice(ua) === b.slice(ub))
			return m + a.slice(0, ua) + ' - ' + b;
		return m + a + ' - ' + b;
	}

	/* ---- header, notes, legends ---- */

	function drawHeader() {
		const dl = el('dl', 'header');

		document.title = data.title;
		root.appendChild(el('h1', '', data.title));
		for (const [label, value] of data.header) {
			dl.appendChild(el('dt', '', label));
			dl.appendChild(el('dd', '', value));
		}
		root.appendChild(dl);
		if (data.lost_warning)
			root.appendChild(el('div', 'banner', 'WARNING: ' + data.lost_warning));
		if (data.notes.length) {
			const ul = el('ul', 'notes');

			ul.id = 'rasp-notes';
			for (const note of data.notes) {
				const li = el('li', note.level === 'NOTE' ? 'note' : 'warning');

				li.dataset.code = note.code;
				li.appendChild(el('b', '', note.level + ':'));
				li.appendChild(document.createTextNode(note.text));
				ul.appendChild(li);
			}
			root.appendChild(ul);
		}
	}

	/* The legend of the marks, when any figure of the page carries one. */
	function drawLegend(parent) {
		let few = false, bad = false, low = false;

		for (let i = 0; i < n; i++) {
			few = few || (nodes[i][SAMPLES] > 0 && nodes[i][SAMPLES] < data.few);
			bad = bad || nodes[i][BAD] === 1;
			low = low || nodes[i][LOW] === 1;
		}
		for (const t of data.types) {
			few = few || t[1] < data.few;
			bad = bad || t[8] === 1;
			low = low || t[9] === 1;
		}
		if (few)
			parent.appendChild(el('p', 'legend', data.few_legend));
		if (low)
			parent.appendChild(el('p', 'legend', data.low_legend));
		if (bad)
			parent.appendChild(el('p', 'legend', data.bad_legend));
	}

	/* ---- the flame graph ---- */

	/* Tree shape from the pre-order: a node's subtree is [i, end[i]), its children are
	 * i + 1, end[i + 1], ... up to end[i]. */
	const parent = new Int32Array(n), depth = new Int32Array(n), end = new Int32Array(n);
	const height = new Int32Array(n);
	for (let i = 0; i < n; i++) {
		parent[i] = nodes[i][PARENT];
		depth[i] = parent[i] >= 0 ? depth[parent[i]] + 1 : 0;
		end[i] = i + 1;
	}
	for (let i = n - 1; i > 0; i--) {
		const p = parent[i];

		if (end[i] > end[p])
			end[p] = end[i];
		if (height[i] + 1 > height[p])
			height[p] = height[i] + 1;
	}

	function nameOf(i) {
		return strings[nodes[i][NAME]];
	}

	/* Warm colours for code, blue for types, violet for processes and threads: a colour
	 * per name (a hash), so a function looks the same wherever it appears. */
	function colour(i) {
		const name = nameOf(i), kind = nodes[i][KIND];
		let h = 2166136261;

		for (let k = 0; k < name.length; k++)
			h = Math.imul(h ^ name.charCodeAt(k), 16777619) >>> 0;
		const r = (h % 1000) / 1000, r2 = ((h >>> 10) % 1000) / 1000;
		if (kind === K_FRAME)
			return 'hsl(' + (5 + 50 * r).toFixed(0) + ',' + (75 + 20 * r2).toFixed(0) +
			       '%,' + (58 + 10 * r2).toFixed(0) + '%)';
		if (kind === K_TYPE || kind === 6)
			return 'hsl(' + (190 + 35 * r).toFixed(0) + ',60%,' +
			       (66 + 10 * r2).toFixed(0) + '%)';
		if (kind === 1 || kind === 2)
			return 'hsl(' + (265 + 25 * r).toFixed(0) + ',45%,78%)';
		return 'hsl(0,0%,80%)';
	}

	const view = {zoom: 0, query: '', match: new Uint8Array(n), drawn: 0};
	const flame = el('div');
	const tip = el('div');
	const selected = el('div');
	const searchBox = el('input');
	const searchResult = el('span');

	/* What the tooltip and the selected-node panel say about node i. */
	function describe(i) {
		const v = nodes[i], total = nodes[0][BYTES];
		const kind = v[KIND], lines = [];
		const m = mark(v[SAMPLES], v[BAD]);
		const conf = data.confidence_text;

		lines.push(nameOf(i));
		lines.push(KINDS[kind] + (v[DETAIL] >= 0 ? ': ' + strings[v[DETAIL]] : ''));
		if (v[SAMPLES] > 0) {
			lines.push('bytes:   ' + bytes(v[BYTES]) + '  (' + conf + ' interval ' +
				   interval(v[BYTES_LOW], v[BYTES_HIGH], true, m) + ')');
			lines.push('objects: ' + count(v[OBJECTS]) + '  (' + conf + ' interval ' +
				   interval(v[OBJECTS_LOW], v[OBJECTS_HIGH], false,
					    objectsMark(v[SAMPLES], v[BAD], v[LOW])) + ')');
		} else {
			lines.push('bytes:   0, no samples');
		}
		lines.push('samples: ' + v[SAMPLES]);
		let share = 'share:   ' + (total > 0 ? percent(v[BYTES] / total) : '-') +
			    ' of all estimated bytes';
		if (view.zoom !== 0 && i > view.zoom && i < end[view.zoom] && nodes[view.zoom][BYTES] > 0)
			share += ', ' + percent(v[BYTES] / nodes[view.zoom][BYTES]) + ' of ' +
				 nameOf(view.zoom);
		lines.push(share);
		if (v[BAD])
			lines.push('! ' + data.bad_legend.replace(/^! /, ''));
		else if (v[SAMPLES] > 0 && v[SAMPLES] < data.few)
			lines.push('~ fewer than ' + data.few + ' samples: a wide interval');
		if (!v[BAD] && v[LOW])
			lines.push(data.low_legend);
		return lines.join('\n');
	}

	function label(i) {
		const m = mark(nodes[i][SAMPLES], nodes[i][BAD]);

		return (m ? m + ' ' : '') + nameOf(i);
	}

	function box(i, x, w, extra) {
		const d = el('div', 'n k' + nodes[i][KIND] + extra, label(i));
		const s = d.style;

		d.dataset.i = i;
		s.left = x.toFixed(1) + 'px';
		s.width = w.toFixed(1) + 'px';
		s.top = (depth[i] * LEVEL_PX) + 'px';
		s.backgroundColor = colour(i);
		return d;
	}

	function flags(i) {
		let f = '';

		if (view.match[i])
			f += ' m';
		if (nodes[i][BAD])
			f += ' bad';
		else if (nodes[i][SAMPLES] > 0 && nodes[i][SAMPLES] < data.few)
			f += ' few';
		return f;
	}

	/* Draws the zoomed node at full width, its ancestors above it (full width, faded) and
	 * whatever of its subtree is at least MIN_PX wide. */
	function draw() {
		const z = view.zoom, frag = document.createDocumentFragment();
		const width = Math.max(flame.clientWidth, 100);
		const zb = nodes[z][BYTES];
		const scale = zb > 0 ? width / zb : 0;
		const stack = [z, 0];
		let drawn = 0;

		for (let a = parent[z]; a >= 0; a = parent[a]) {
			frag.appendChild(box(a, 0, width, ' anc' + flags(a)));
			drawn++;
		}
		while (stack.length) {
			const x = stack.pop(), i = stack.pop();
			const w = i === z ? width : nodes[i][BYTES] * scale;

			frag.appendChild(box(i, x, w, flags(i)));
			drawn++;
			/* Children left to right, largest first; pushed so the leftmost pops first. */
			const kids = [];
			let cx = x;
			for (let c = i + 1; c < end[i]; c = end[c]) {
				const cw = nodes[c][BYTES] * scale;

				if (cw >= MIN_PX)
					kids.push(c, cx);
				cx += cw;
			}
			for (let k = kids.length - 2; k >= 0; k -= 2)
				stack.push(kids[k], kids[k + 1]);
		}
		flame.textContent = '';
		flame.style.height = ((depth[z] + height[z] + 1) * LEVEL_PX) + 'px';
		flame.appendChild(frag);
		view.drawn = drawn;
		selected.textContent = z !== 0 ? 'zoomed to:\n' + describe(z) : '';
		status();
	}

	/* Plain text matches case-insensitively anywhere in a name; /text/ is a regular
	 * expression. The share counts each matching subtree once (a function that calls itself
	 * is not counted twice): a point estimate, as no interval exists for an arbitrary set
	 * of nodes here. */
	function search() {
		const q = view.query;
		let test = null, matched = 0, sum = 0;

		view.match.fill(0);
		if (q.length > 2 && q[0] === '/' && q[q.length - 1] === '/') {
			try {
				const re = new RegExp(q.slice(1, -1));

				test = (s) => re.test(s);
			} catch (e) {
				searchResult.textContent = 'not a regular expression: ' + e.message;
				return;
			}
		} else if (q) {
			const lq = q.toLowerCase();

			test = (s) => s.toLowerCase().indexOf(lq) >= 0;
		}
		if (!test) {
			searchResult.textContent = '';
			return;
		}
		for (let i = 1; i < n; i++)
			if (test(nameOf(i))) {
				view.match[i] = 1;
				matched++;
			}
		for (let i = 1; i < n;) {
			if (view.match[i]) {
				sum += nodes[i][BYTES];
				i = end[i];
			} else {
				i++;
			}
		}
		const total = nodes[0][BYTES];
		searchResult.textContent = matched + ' node' + (matched === 1 ? '' : 's') +
					   ' match: ' + bytes(sum) + ', ' +
					   (total > 0 ? percent(sum / total) : '-') +
					   ' of all estimated bytes (point estimate)';
	}

	/* The view from the URL's fragment: #zoom=ID&q=TEXT. */
	function fromHash() {
		const p = new URLSearchParams(location.hash.replace(/^#/, ''));
		const z = Number(p.get('zoom') || 0);

		view.zoom = Number.isInteger(z) && z >= 0 && z < n ? z : 0;
		view.query = p.get('q') || '';
		searchBox.value = view.query;
		search();
		draw();
	}

	function hashOf(zoom, query) {
		const p = new URLSearchParams();

		if (zoom)
			p.set('zoom', String(zoom));
		if (query)
			p.set('q', query);
		return '#' + p.toString();
	}

	function zoomTo(i) {
		if (i === view.zoom)
			return;
		/* A new history entry: Back returns to the previous view. */
		location.hash = hashOf(i, view.query);
	}

	function nodeAt(target) {
		const d = target && target.closest ? target.closest('.n') : null;

		return d ? Number(d.dataset.i) : -1;
	}

	function drawFlame() {
		const sec = el('section');
		const controls = el('div', 'controls');
		const reset = el('button', '', 'Reset zoom');

		sec.id = 'rasp-graph';
		sec.appendChild(el('h2', '', data.live && data.live.inuse
			? 'Flame graph of estimated bytes in use at ' +
			  (data.live.moment_s !== null ? data.live.moment_s.toFixed(3) + ' s' : 'the end')
			: 'Flame graph of estimated bytes'));
		sec.appendChild(el('p', 'legend',
				   'Top: all samples; below each node, the frames it called and, ' +
				   'under the allocating frame, the type allocated. A width is the ' +
				   'node\'s share of the estimated bytes. Click a node to zoom in, an ' +
				   'upper node, Reset or Escape (or the browser\'s Back) to zoom out; ' +
				   'hover for the estimate and its ' + data.confidence_text +
				   ' interval.'));
		searchBox.type = 'search';
		searchBox.id = 'rasp-search';
		searchBox.placeholder = 'search: text, or /regex/';
		searchResult.id = 'rasp-search-result';
		reset.id = 'rasp-reset';
		controls.appendChild(searchBox);
		controls.appendChild(reset);
		controls.appendChild(searchResult);
		sec.appendChild(controls);
		selected.id = 'rasp-selected';
		sec.appendChild(selected);
		flame.id = 'rasp-flame';
		sec.appendChild(flame);
		tip.id = 'rasp-tip';
		tip.hidden = true;
		sec.appendChild(tip);
		root.appendChild(sec);

		flame.addEventListener('click', (e) => {
			const i = nodeAt(e.target);

			if (i >= 0)
				zoomTo(i);
		});
		flame.addEventListener('mousemove', (e) => {
			const i = nodeAt(e.target);

			if (i < 0) {
				tip.hidden = true;
				return;
			}
			if (tip.dataset.i !== String(i)) {
				tip.textContent = describe(i);
				tip.dataset.i = String(i);
			}
			tip.hidden = false;
			/* Beside the pointer, kept inside the window. */
			const x = Math.min(e.clientX + 14, window.innerWidth - tip.offsetWidth - 4);
			const y = e.clientY + 16 + tip.offsetHeight > window.innerHeight ?
					  e.clientY - tip.offsetHeight - 8 : e.clientY + 16;
			tip.style.left = Math.max(0, x) + 'px';
			tip.style.top = Math.max(0, y) + 'px';
		});
		flame.addEventListener('mouseleave', () => {
			tip.hidden = true;
		});
		reset.addEventListener('click', () => zoomTo(0));
		document.addEventListener('keydown', (e) => {
			if (e.key === 'Escape' && e.target !== searchBox)
				zoomTo(0);
		});
		searchBox.addEventListener('input', () => {
			view.query = searchBox.value;
			/* Replaces the entry: typing is not a history of views. */
			location.replace(hashOf(view.zoom, view.query));
		});
		window.addEventListener('hashchange', fromHash);
		let pending = false;
		window.addEventListener('resize', () => {
			if (pending)
				return;
			pending = true;
			requestAnimationFrame(() => {
				pending = false;
				draw();
			});
		});
		if (nodes[0][SAMPLES] === 0)
			sec.appendChild(el('p', 'legend', 'No samples: nothing to draw.'));
	}

	/* ---- the per-type table ---- */

	function cell(tr, text, cls) {
		tr.appendChild(el('td', cls, text));
	}

	function estRow(tbody, name, e, cls) {
		/* e: [samples, bytes, low, high, objects, low, high, contradicts, low_confidence,
		 * share] */
		const tr = el('tr', cls);
		const m = mark(e[0], e[7]);

		if (e[8] === 1)
			tr.dataset.lowConfidence = '1';
		cell(tr, name, 'name');
		cell(tr, bytes(e[1]), 'num');
		cell(tr, e[0] ? interval(e[2], e[3], true, m) : '-', 'num');
		cell(tr, percent(e[9]), 'num');
		cell(tr, count(e[4]), 'num');
		cell(tr, e[0] ? interval(e[5], e[6], false, objectsMark(e[0], e[7], e[8])) : '-',
		     'num');
		cell(tr, String(e[0]), 'num');
		tbody.appendChild(tr);
	}

	function drawTypes() {
		const sec = el('section'), table = el('table', 'est'), head = el('tr');
		const tbody = el('tbody'), thead = el('thead');
		const ci = data.confidence_text + ' INTERVAL';

		sec.id = 'rasp-types';
		sec.appendChild(el('h2', '', data.live && data.live.inuse
			? 'Estimated bytes in use by type' : 'Estimated allocations by type'));
		for (const h of ['TYPE', 'BYTES', ci, 'SHARE', 'OBJECTS', ci, 'SAMPLES'])
			head.appendChild(el('th', '', h));
		thead.appendChild(head);
		table.appendChild(thead);
		for (const t of data.types)
			estRow(tbody, t[0], t.slice(1), 'type');
		const tot = data.total;
		estRow(tbody, 'TOTAL', tot.concat([tot[1] > 0 ? 1 : 0]), 'total');
		table.appendChild(tbody);
		sec.appendChild(table);
		drawLegend(sec);
		root.appendChild(sec);
	}

	/* GCAllocationTick events (older .NET): biased, never estimates. */
	function drawTicks() {
		const t = data.ticks;

		if (!t || !t.rows.length)
			return;
		const sec = el('section'), table = el('table', 'est'), tr = el('tr');

		sec.id = 'rasp-ticks';
		sec.appendChild(el('h2', '', 'GCAllocationTick events'));
		sec.appendChild(el('p', 'banner', t.note));
		for (const h of ['TYPE', 'TICKS', 'ALLOCATION_AMOUNT'])
			tr.appendChild(el('th', '', h));
		table.appendChild(tr);
		const rows = t.rows.map((r) => [r, '']);
		rows.push([['TOTAL', t.ticks, t.allocation_amount], 'total']);
		for (const [r, cls] of rows) {
			const row = el('tr', cls);

			cell(row, r[0], 'name');
			cell(row, String(r[1]), 'num');
			cell(row, String(r[2]), 'num');
			table.appendChild(row);
		}
		sec.appendChild(table);
		root.appendChild(sec);
	}

	/* ---- live bytes over time (data.live: an input with free events) ---- */

	/* The SVG namespace, from the HTML parser rather than written out: the page holds no
	 * URL at all, so "no URL in the page" stays a check that nothing is loaded. */
	const SVG = (function () {
		const holder = document.createElement('div');

		holder.innerHTML = '<svg></svg>';
		return holder.firstChild.namespaceURI;
	}());
	const SERIES_COLOURS = ['#222', '#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e',
				'#8c564b'];

	function svgEl(tag, attrs) {
		const e = document.createElementNS(SVG, tag);

		for (const k in attrs)
			e.setAttribute(k, String(attrs[k]));
		return e;
	}

	/* One line per series (the total first, then the largest types) with its interval as a
	 * band, and the report's moment as a vertical rule. */
	function drawLive() {
		const live = data.live;

		if (!live || !live.t.length)
			return;
		const sec = el('section'), W = 900, H = 260, L = 70, R = 10, T = 10, B = 30;
		const t0 = live.t[0], t1 = Math.max(live.t[live.t.length - 1], t0 + 1e-9);
		let top = 1;

		for (const s of live.series)
			for (const p of s.v)
				if (p[2] !== null && p[2] > top)
					top = p[2];
		const x = (t) => L + (W - L - R) * (t - t0) / (t1 - t0);
		const y = (b) => T + (H - T - B) * (1 - b / top);
		const svg = svgEl('svg', {viewBox: '0 0 ' + W + ' ' + H, width: '100%',
					  role: 'img', id: 'rasp-live-chart'});

		sec.id = 'rasp-live';
		sec.appendChild(el('h2', '', 'Live bytes over time'));
		sec.appendChild(el('p', 'legend',
				   'Estimated bytes still allocated, from the recording\'s first event; ' +
				   'the band is the ' + data.confidence_text + ' interval' +
				   (live.moment_s !== null ? '; the rule marks the moment the ' +
				    (live.inuse ? 'report and flame graph are' : 'in-use figures are') +
				    ' of (' + live.moment_s.toFixed(3) + ' s)' : '') + '.'));
		for (let k = 0; k <= 4; k++) {
			const b = top * k / 4;

			svg.appendChild(svgEl('line', {x1: L, x2: W - R, y1: y(b), y2: y(b),
						       stroke: '#ddd'}));
			const tx = svgEl('text', {x: L - 4, y: y(b) + 4, 'text-anchor': 'end',
						  'font-size': 11});
			tx.textContent = bytes(b);
			svg.appendChild(tx);
		}
		for (let k = 0; k <= 4; k++) {
			const tt = t0 + (t1 - t0) * k / 4;
			const tx = svgEl('text', {x: x(tt), y: H - 10, 'text-anchor': 'middle',
						  'font-size': 11});
			tx.textContent = tt.toFixed(3) + ' s';
			svg.appendChild(tx);
		}
		const ul = el('ul', 'live-legend');

		live.series.forEach((s, i) => {
			const c = SERIES_COLOURS[i % SERIES_COLOURS.length];
			let line = '', band = '', back = '';

			s.v.forEach((p, k) => {
				if (p[0] === null)
					return;
				line += x(live.t[k]) + ',' + y(p[0]) + ' ';
				band += x(live.t[k]) + ',' + y(p[2] === null ? p[0] : p[2]) + ' ';
				back = x(live.t[k]) + ',' + y(p[1] === null ? p[0] : p[1]) + ' ' + back;
			});
			const g = svgEl('g', {'data-series': i});

			g.appendChild(svgEl('polygon', {points: band + back, fill: c,
							'fill-opacity': 0.12, stroke: 'none'}));
			g.appendChild(svgEl('polyline', {points: line, fill: 'none', stroke: c,
							 'stroke-width': i ? 1.5 : 2}));
			svg.appendChild(g);
			const li = el('li');
			const sw = el('span', 'swatch', '\u25a0 ');

			sw.dataset.colour = c;
			li.appendChild(sw);
			li.appendChild(document.createTextNode(s.name));
			ul.appendChild(li);
		});
		if (live.moment_s !== null)
			svg.appendChild(svgEl('line', {x1: x(live.moment_s), x2: x(live.moment_s),
						       y1: T, y2: H - B, stroke: '#b00',
						       'stroke-dasharray': '4 3'}));
		sec.appendChild(svg);
		sec.appendChild(ul);
		/* The swatches' colours through the CSSOM (allowed by the page's policy). */
		for (const sw of ul.querySelectorAll('.swatch'))
			sw.style.color = sw.dataset.colour;
		root.appendChild(sec);
	}

	function status() {
		if (window.raspErrorCount)
			return;
		document.getElementById('rasp-status').textContent =
		    'ok: ' + n + ' node' + (n === 1 ? '' : 's') + ' (' + view.drawn + ' drawn)';
	}

	drawHeader();
	drawLive();
	drawFlame();
	drawTypes();
	drawTicks();
	fromHash();
}());
