// Copy buttons for a secret shown once.
for (const b of document.querySelectorAll("button[data-copy]")) {
  const input = document.querySelector(b.dataset.copy);
  if (!input) continue;
  b.hidden = false;
  b.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(input.value);
    } catch {
      input.select();
      document.execCommand("copy");
    }
    b.textContent = "Copied";
    setTimeout(() => { b.textContent = "Copy"; }, 2000);
  });
}
