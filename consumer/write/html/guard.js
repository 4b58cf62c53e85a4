/* rasp report page, first script: runs before the main one (report.js) so that any error of
 * the page, a syntax error that stops report.js from running at all included, is written into
 * #rasp-errors and #rasp-status instead of leaving a silently incomplete report. Also shows
 * what the page's Content-Security-Policy blocked: nothing should be. */
(function () {
	'use strict';
	window.raspErrorCount = 0;
	function show(text) {
		var box = document.getElementById('rasp-errors');
		var status = document.getElementById('rasp-status');
		var line;

		window.raspErrorCount++;
		if (box) {
			line = document.createElement('div');
			line.textContent = text;
			box.appendChild(line);
			box.hidden = false;
		}
		if (status)
			status.textContent = 'error: the report is not shown completely (see the errors)';
	}
	window.raspShowError = show;
	window.onerror = function (message, source, line, column, error) {
		show('script error: ' + message + (line ? ' (line ' + line + ':' + column + ')' : '') +
		     (error && error.stack ? '\n' + error.stack : ''));
		return false;
	};
	window.addEventListener('unhandledrejection', function (e) {
		show('script error: ' + e.reason);
	});
	document.addEventListener('securitypolicyviolation', function (e) {
		show('blocked by the page\'s security policy: ' + e.violatedDirective + ' ' +
		     (e.blockedURI || ''));
	});
}());
