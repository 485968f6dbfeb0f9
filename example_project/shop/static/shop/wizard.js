// The onboarding wizard. It drives the "onboarding" workflow through the REST API
// (/api/instances/...) as any client would: the session cookie and the CSRF header
// authenticate it, ETags guard each change. No framework and no build step.
//
// The state of the step on screen is saved with PATCH .../state/, then "next" is
// sent to the onboarding; during the identity check the onboarding passes it on to
// its nested child instance, whose form is shown instead. Validation messages that
// start with a field name ("email: ...") are shown beside that field. While an
// operator reviews the document, and while the onboarding waits for the customer to
// open the link it emailed, the page polls and moves on by itself.
//
// The buttons are the onboarding's commands that apply now, as the API's "actions"
// say. A person sees the errors of their own command, and otherwise only those about a
// field on the screen: state they can fix. (An operator's refused command on the
// identity check is not the customer's to read.)
(function () {
  "use strict";

  const root = document.getElementById("wizard");
  const API = root.dataset.api;
  const WORKFLOW = root.dataset.workflow;
  const CSRF = root.dataset.csrf;
  const PLANS = JSON.parse(document.getElementById("plans").textContent);
  const POLL_MS = 2000;
  const FIELD_MESSAGE = /^([a-z_]+): (.+)$/s;

  let parent = null; // the onboarding instance, as the API last showed it
  let parentTag = null; // ... and its ETag
  let child = null; // its identity check, while that step runs
  let childTag = null;
  let pollTimer = null;
  let ownCommand = false; // the screen is the answer to this person's own command

  const $ = (selector, element = document) => element.querySelector(selector);
  const $$ = (selector, element = document) => Array.from(element.querySelectorAll(selector));

  async function request(method, path, body, etag) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET") headers["X-CSRFToken"] = CSRF;
    if (etag) headers["If-Match"] = etag;
    const response = await fetch(API + path, {
      method, headers, credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let data = null;
    try { data = await response.json(); } catch (error) { data = null; }
    return { status: response.status, data, etag: response.headers.get("ETag") };
  }

  // -- loading ------------------------------------------------------------------------

  async function load(id) {
    const answer = await request("GET", `instances/${id}/`);
    if (answer.status !== 200) {
      parent = null;
      return answer;
    }
    parent = answer.data;
    parentTag = answer.etag;
    child = null;
    childTag = null;
    if (parent.current_step === "identity" && parent.nested) {
      const got = await request("GET", `instances/${parent.nested.id}/`);
      if (got.status === 200) {
        child = got.data;
        childTag = got.etag;
      }
    }
    return answer;
  }

  // The screen to show: a step of the onboarding, or of its identity check.
  function screen() {
    if (!parent || parent.status === "idle") return "start";
    if (parent.status === "completed") return "done";
    if (["failed", "cancelled"].includes(parent.status)) return "stopped";
    if (child && !["completed", "cancelled"].includes(child.status)) return child.current_step;
    return parent.current_step;
  }

  // The instance whose state the screen edits.
  function edited() {
    return child && ["document", "review"].includes(screen()) ? child : parent;
  }

  // -- showing ------------------------------------------------------------------------

  function clearErrors() {
    $$("[data-error-for]").forEach((slot) => { slot.textContent = ""; slot.hidden = true; });
    $$("[aria-invalid]").forEach((input) => input.removeAttribute("aria-invalid"));
    showGeneral([]);
  }

  function showGeneral(messages) {
    const box = $("#form-errors");
    box.textContent = messages.join(" ");
    box.hidden = messages.length === 0;
  }

  // What the person can act on: after their own command every error it met; otherwise
  // the errors about a field on this screen, whoever's command stored them.
  function errorsFor(section, messages) {
    if (ownCommand) return messages;
    return messages.filter((message) => {
      const match = FIELD_MESSAGE.exec(message);
      return match && section && $$(`[name="${match[1]}"]`, section).length > 0;
    });
  }

  // A command the onboarding would accept now. Next also applies when only the step's
  // validation stands in the way and the screen has the fields to fix it (sending the
  // form saves them first; a blocked step is unblocked by the save).
  function applies(name, section) {
    const verdict = parent.actions[name];
    if (verdict.allowed) return true;
    if (name !== "next" || !section || !$$("input, select", section).length) return false;
    return [parent.actions.next, parent.actions.validate]
      .some((refusal) => refusal.code === "validation_failed");
  }

  // Each "field: message" beside its field on the current screen; the rest on top.
  function showErrors(messages) {
    const section = $(`[data-screen="${screen()}"]`);
    const general = [];
    for (const message of messages) {
      const match = FIELD_MESSAGE.exec(message);
      const slot = match && section && $(`[data-error-for="${match[1]}"]`, section);
      if (slot) {
        slot.textContent = match[2];
        slot.hidden = false;
        $$(`[name="${match[1]}"]`, section).forEach((input) => input.setAttribute("aria-invalid", "true"));
      } else {
        general.push(message);
      }
    }
    showGeneral(general);
  }

  // A 400 from PATCH .../state/ names fields as "state.<name>".
  function schemaMessages(body) {
    if (!body || !body.fields) return [body && body.detail ? body.detail : "The form could not be saved."];
    return Object.entries(body.fields).flatMap(([name, messages]) =>
      messages.map((message) => `${name.replace(/^state\./, "")}: ${message}`));
  }

  function fill(section, state) {
    for (const input of $$("input, select", section)) {
      if (!(input.name in state)) continue;
      const value = state[input.name];
      if (input.type === "checkbox") input.checked = value === true;
      else if (input.type === "radio") input.checked = input.value === value;
      else input.value = value === null || value === undefined ? "" : value;
    }
  }

  function values(section) {
    const found = {};
    for (const input of $$("input, select", section)) {
      if (!input.name) continue;
      if (input.type === "checkbox") found[input.name] = input.checked;
      else if (input.type === "radio") { if (input.checked) found[input.name] = input.value; }
      else found[input.name] = input.value.trim();
    }
    return found;
  }

  function planLabel(state) {
    if (state.plan) return PLANS[state.plan];
    return state.invite_code ? "The plan of your invite" : PLANS.starter;
  }

  function render() {
    const name = screen();
    $$("section[data-screen]").forEach((section) => { section.hidden = section.dataset.screen !== name; });
    const onForm = !["start", "done", "stopped", "loading"].includes(name);
    $("#step-form").hidden = !onForm;
    const step = parent ? parent.current_step : null;
    $$("[data-step]").forEach((item) => {
      const id = item.dataset.step;
      item.classList.toggle("current", onForm && id === step);
      item.classList.toggle("done", !!parent && parent.completed_steps.includes(id));
      item.classList.toggle("skipped", !!parent && parent.skipped_steps.includes(id));
      item.toggleAttribute("aria-current", onForm && id === step);
    });
    clearErrors();
    if (onForm) {
      const section = $(`[data-screen="${name}"]`);
      fill(section, edited().state);
      showErrors(errorsFor(section, edited().errors));
      for (const command of ["back", "skip", "next"]) $(`#${command}`).hidden = !applies(command, section);
      $("#next").textContent = name === "confirm" ? "Open my account" : "Next";
    }
    if (name === "start") {
      // An onboarding made but not started yet (say, by the back office) starts here.
      $("#start").hidden = !!parent && !parent.actions.start.allowed;
    }
    if (name === "confirm") {
      $("#summary-name").textContent = parent.state.name;
      $("#summary-email").textContent = parent.state.email;
      $("#summary-plan").textContent = planLabel(parent.state);
    }
    if (name === "email") {
      $("#email-address").textContent = parent.state.email;
    }
    if (name === "done") {
      const confirmed = parent.state.email_confirmation;
      $("#welcome").textContent = `Your account is open, ${parent.state.name}. ` +
        (confirmed ? `Your email address ${confirmed.email} is confirmed.`
          : `We could not confirm your email address ${parent.state.email}.`);
    }
    if (name === "stopped") {
      const reasons = parent.errors.length ? parent.errors : [`The application was ${parent.status}.`];
      $("#stop-reasons").replaceChildren(...reasons.map((reason) => {
        const item = document.createElement("li");
        item.textContent = reason;
        return item;
      }));
    }
    root.dataset.showing = name; // for tests and styling
    root.dataset.revisions = revisions();
    poll(["review", "email"].includes(name));
  }

  // -- acting -------------------------------------------------------------------------

  // After a command: read both instances again (either may have moved), then show
  // what the command's refusal said, unless it is in the instances' errors already.
  async function settle(answer) {
    await load(parent.id);
    ownCommand = true;
    try {
      render();
    } finally {
      ownCommand = false;
    }
    if (answer.status === 409 && answer.data && answer.data.code === "validation_failed") return;
    if (answer.status === 412) {
      showGeneral(["Your application was changed in another window; this is how it stands now."]);
    } else if (answer.status >= 400) {
      showGeneral([answer.data && answer.data.detail ? answer.data.detail : `Error ${answer.status}`]);
    }
  }

  async function command(name) {
    const answer = await request("POST", `instances/${parent.id}/${name}/`, {}, parentTag);
    await settle(answer);
  }

  async function next() {
    const target = edited();
    const section = $(`[data-screen="${screen()}"]`);
    const changes = values(section);
    if (Object.keys(changes).length) {
      const saved = await request("PATCH", `instances/${target.id}/state/`,
        { state: { ...target.state, ...changes } }, target === child ? childTag : parentTag);
      if (saved.status === 400) {
        clearErrors();
        showErrors(schemaMessages(saved.data));
        return;
      }
      if (saved.status !== 200) {
        await settle(saved);
        return;
      }
      await load(parent.id); // saving the child's state may move its parent's revision
    }
    await command("next");
  }

  async function start() {
    if (parent && parent.status === "idle") {
      await command("start");
      return;
    }
    const answer = await request("POST", "instances/", { workflow: WORKFLOW, start: true });
    if (answer.status !== 201) {
      showGeneral([answer.data && answer.data.detail ? answer.data.detail : `Error ${answer.status}`]);
      return;
    }
    history.replaceState(null, "", `?instance=${answer.data.id}`);
    await load(answer.data.id);
    render();
  }

  function revisions() {
    return [parent, child].filter(Boolean).map((shown) => shown.revision).join(" ");
  }

  function poll(on) {
    if (!on) {
      clearTimeout(pollTimer);
      pollTimer = null;
      return;
    }
    if (pollTimer) return;
    pollTimer = setTimeout(async () => {
      pollTimer = null;
      const shown = screen();
      const before = revisions();
      await load(parent.id);
      if (revisions() !== before || screen() !== shown) render();
      else poll(true);
    }, POLL_MS);
  }

  // Buttons are disabled while a request runs, so a double click sends one command.
  function guarded(action) {
    return async (event) => {
      if (event) event.preventDefault();
      const buttons = $$("button", root);
      buttons.forEach((button) => { button.disabled = true; });
      root.setAttribute("aria-busy", "true");
      try {
        await action();
      } catch (error) {
        showGeneral([`Something went wrong: ${error.message}`]);
      } finally {
        buttons.forEach((button) => { button.disabled = false; });
        root.removeAttribute("aria-busy");
      }
    };
  }

  $("#step-form").addEventListener("submit", guarded(next));
  $("#back").addEventListener("click", guarded(() => command("back")));
  $("#skip").addEventListener("click", guarded(() => command("skip")));
  $("#start").addEventListener("click", guarded(start));
  $("#restart").addEventListener("click", guarded(start));

  // On load: the instance named in the URL, or offer the newest unfinished one.
  guarded(async () => {
    const id = new URLSearchParams(location.search).get("instance");
    if (id && (await load(id)).status === 200) {
      render();
      return;
    }
    parent = null;
    const open = await request("GET",
      `instances/?workflow=${WORKFLOW}&status=running&status=blocked&page_size=1`);
    const found = open.status === 200 && open.data.results.length ? open.data.results[0] : null;
    const resume = $("#resume");
    resume.hidden = !found;
    if (found) {
      resume.onclick = guarded(async () => {
        history.replaceState(null, "", `?instance=${found.id}`);
        await load(found.id);
        render();
      });
    }
    render();
  })();
})();
