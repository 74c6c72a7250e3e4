// The live site's one script of its own (book/live.py adds it to lab/index.html). JupyterLab drops a
// Run command given before the notebook's kernel session exists (it clears the cells' execution), so
// a learner who clicks Run All as soon as the notebook shows would get nothing. Here such a command
// waits for the session instead, then runs as given.
(function waitForApp() {
  const app = window.jupyterapp;
  if (!app) {
    setTimeout(waitForApp, 50);
    return;
  }
  const execute = app.commands.execute.bind(app.commands);
  app.commands.execute = (id, args) => {
    const widget = app.shell.currentWidget;
    const context = widget && widget.sessionContext;
    if (id.startsWith("notebook:run-") && context && !(context.session && context.session.kernel)) {
      return context.ready.then(() => execute(id, args));
    }
    return execute(id, args);
  };
})();
