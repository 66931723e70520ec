/* The API docs page (/api/docs): Swagger UI (vendored) with the settings the server rendered as JSON.
 * A file rather than an inline script, so the page works under the Content-Security-Policy
 * (script-src 'self'). Requests the page sends carry the session's CSRF token, as the API asks of
 * session callers on unsafe methods. */
(function () {
  "use strict";
  const config = JSON.parse(document.getElementById("swagger-settings").textContent);
  const csrf = document.querySelector('meta[name="csrf-token"]')?.content;
  window.SwaggerUIBundle({
    ...config,
    dom_id: "#swagger-ui",
    presets: [window.SwaggerUIBundle.presets.apis],
    requestInterceptor: (request) => {
      if (csrf) request.headers["X-CSRFToken"] = csrf;
      return request;
    },
  });
})();
