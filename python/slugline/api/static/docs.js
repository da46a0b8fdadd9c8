// Starts Swagger UI on the API docs page. A file of its own, not inline: the page's policy runs no inline script.
"use strict";
(function () {
  const root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapi,
    domNode: root,
    layout: "BaseLayout",
    presets: [SwaggerUIBundle.presets.apis],
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null, // Swagger UI would otherwise send the document to validator.swagger.io
  });
})();
