// Document upload with progress: multipart POST to the API's
// /v1/collections/{id}/documents through /console/api, with XMLHttpRequest
// (fetch reports no upload progress). Without JavaScript the form stays
// hidden and the plain text form works.
const form = document.getElementById("upload-form");
if (form) {
  form.hidden = false;
  const bar = document.getElementById("u-progress");
  const status = document.getElementById("u-status");
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const file = form.elements.file.files[0];
    if (!file) return;
    const body = new FormData();
    body.append("file", file);
    body.append("title", file.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `/console/api/collections/${encodeURIComponent(form.dataset.collection)}/documents`);
    xhr.setRequestHeader("X-CSRF-Token", form.dataset.csrf);
    bar.hidden = false;
    bar.value = 0;
    status.textContent = `Uploading ${file.name}…`;
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) bar.value = Math.round((100 * e.loaded) / e.total);
    });
    xhr.addEventListener("load", () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        bar.value = 100;
        status.textContent = `${file.name} uploaded; it is searchable once ready.`;
        setTimeout(() => window.location.reload(), 800);
      } else {
        let msg = `HTTP ${xhr.status}`;
        try { msg = JSON.parse(xhr.responseText).error.message; } catch {}
        status.textContent = `Upload failed: ${msg}`;
      }
    });
    xhr.addEventListener("error", () => { status.textContent = "Upload failed: the connection broke."; });
    xhr.send(body);
  });
}
