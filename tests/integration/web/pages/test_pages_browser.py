"""The web page in a real browser: headless chromium against ``reposync api`` (gunicorn,
two worker processes) and a real ``celery worker`` on PostgreSQL and Redis. Each page is
kept as a screenshot (``tests/browser.py: screenshot``, in ``$REPOSYNC_TEST_ARTIFACTS`` or
``tests/.artifacts``) for a person to look at.

What a person does: sign in with a token, create a Binding on the Overview, sync it,
watch the Run's progress arrive on its page without reloading, cancel it, and recover a
Run whose write outcome is unknown. Every wait is an explicit Selenium wait on what the
page shows; a ``window`` marker set after the page loaded proves the text came without a
reload (a reload would make a new window object).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait
from sqlalchemy import select

from reposync.models import Binding, Run
from reposync.service.accounts.users import create_user, grant, issue_token
from reposync.service.bindings import SyncRequest, bind
from reposync.service.context import ServiceContext
from tests.browser import screenshot
from tests.gitrepo import generate, init_bare, install_gate_hook, refs
from tests.many_bindings import seed
from tests.servers import free_port
from tests.unknown_writes import plant_unknown
from tests.workers import start_api, start_worker, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

SAME_DOCUMENT = "return window.__reposyncSameDocument === true"


def mark_document(browser: WebDriver) -> None:
    browser.execute_script("window.__reposyncSameDocument = true")


def text_of(browser: WebDriver, element_id: str) -> str:
    return browser.find_element(By.ID, element_id).text


def test_sign_in_create_sync_watch_live_cancel_and_recover(
    tmp_path: Path, dctx: ServiceContext, env, processes, browser
):
    source = generate(tmp_path / "src.git", commits=30, branches=20, tags=5)
    target = init_bare(tmp_path / "dst.git")
    entered, gate = tmp_path / "push-entered", tmp_path / "push-gate"
    install_gate_hook(target, entered, gate)
    port = free_port()
    processes.append(start_worker(env, tmp_path, "w1"))
    processes.append(start_api(env, tmp_path, port))
    admin = create_user(dctx, "ops", role="admin")
    token = issue_token(dctx, admin.id)
    base = f"http://127.0.0.1:{port}"
    wait = WebDriverWait(browser, 60)

    # Sign in: `/` sends the browser to the form, the token brings it back.
    browser.get(base + "/")
    wait.until(ec.url_contains("/signin"))
    browser.find_element(By.ID, "token").send_keys(token)
    browser.find_element(By.ID, "signin").click()
    wait.until(ec.presence_of_element_located((By.ID, "create-binding")))
    assert text_of(browser, "who") == "ops (admin)"
    assert "No Binding you may see." in browser.page_source

    # Create the Binding through the Overview's form: its page shows the pair.
    browser.find_element(By.ID, "source").send_keys(f"local:{source}")
    browser.find_element(By.ID, "target").send_keys(f"local:{target}")
    browser.find_element(By.ID, "create").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "authority"), str(source)))
    assert str(target) in text_of(browser, "standby")
    screenshot(browser, "binding-new")
    assert "no successful full apply" in text_of(browser, "sync-why") + browser.page_source

    # Sync now: the Run's page, then the worker's progress arrives while we look.
    browser.find_element(By.ID, "sync-now").click()
    wait.until(ec.url_matches(r"/runs/\d+$"))
    run_id = int(browser.current_url.rsplit("/", 1)[1])
    mark_document(browser)
    wait_for(entered.exists, 60, "the worker to be inside the held push")
    wait.until(ec.text_to_be_present_in_element((By.ID, "run-stage"), "applying"))
    wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-type="git_ref"]')))
    wait.until(
        ec.text_to_be_present_in_element((By.CSS_SELECTOR, '[data-stage="applying"]'), "applying")
    )
    assert "current" in browser.find_element(
        By.CSS_SELECTOR, 'li[data-stage="applying"]'
    ).get_attribute("class")
    assert browser.execute_script(SAME_DOCUMENT), "the page reloaded instead of updating"
    assert text_of(browser, "run-status") == "running"
    screenshot(browser, "run-live")

    # Cancel: asked at once, it reaches the held push (git and the target's hook are
    # stopped; nothing lands) without the gate ever opening, seen live.
    browser.find_element(By.ID, "cancel").click()
    wait.until(ec.presence_of_element_located((By.ID, "cancel-requested")))
    mark_document(browser)
    seen = max(
        int(e.get_attribute("data-seq"))
        for e in browser.find_elements(By.CSS_SELECTOR, "#events li")
    )
    wait.until(ec.text_to_be_present_in_element((By.ID, "run-status"), "cancelled"))
    wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, f'#events li[data-seq="{seen + 1}"]'))
    )
    wait.until(ec.text_to_be_present_in_element((By.ID, "stream-state"), "ended"))
    assert browser.execute_script(SAME_DOCUMENT), "the page reloaded instead of updating"
    assert browser.find_elements(By.ID, "retry")  # a cancelled Run offers a retry
    assert not browser.find_elements(By.ID, "cancel")
    screenshot(browser, "run-cancelled")
    with dctx.db.session() as session:
        assert session.get(Run, run_id).status == "cancelled"

    assert "refs/heads/main" not in refs(target)  # the stopped push wrote nothing

    # Recover: a Run whose write nobody observed shows the problem and its button; the
    # read-back proves the write (made behind reposync's back here, past the target's
    # hooks) and the Binding is free again.
    gate.touch()
    with dctx.db.session() as session:
        binding_id = session.execute(select(Binding.id)).scalar_one()
    subprocess.run(
        ["git", "--git-dir", str(target), "fetch", "-q", str(source), "main:refs/heads/main"],
        check=True,
    )
    main = refs(target)["refs/heads/main"]
    unknown_run = plant_unknown(dctx, binding_id, "refs/heads/main", main, object_key="branch main")
    browser.get(f"{base}/runs/{unknown_run}")
    problem = wait.until(
        ec.presence_of_element_located((By.CSS_SELECTOR, 'li[data-code="result_unknown"]'))
    )
    assert "1 write(s) whose outcome nobody observed" in problem.text
    browser.get(f"{base}/bindings/{binding_id}")
    # Waited for, not read at once: on a loaded machine the page left behind (its live
    # stream ending) may still be unloading when ``get`` returns, and the source is empty.
    wait.until(lambda b: "write(s) of unknown outcome" in b.page_source)
    browser.get(f"{base}/runs/{unknown_run}")
    wait.until(ec.element_to_be_clickable((By.ID, "recover"))).click()
    wait.until(ec.presence_of_element_located((By.ID, "recovered")))
    assert "1 write(s) proven written" in text_of(browser, "recovered")
    assert text_of(browser, "run-status") == "completed"
    assert not browser.find_elements(By.CSS_SELECTOR, 'li[data-code="result_unknown"]')

    # Activity lists both Runs; signing out ends the session.
    browser.get(f"{base}/activity")
    for run in (run_id, unknown_run):
        assert browser.find_elements(By.CSS_SELECTOR, f'tr[data-run="{run}"]')
    browser.find_element(By.CSS_SELECTOR, "form.signout button").click()
    wait.until(ec.url_contains("/signin"))
    browser.get(base + "/")
    wait.until(ec.url_contains("/signin"))


def test_a_member_does_not_see_anothers_binding(
    tmp_path: Path, dctx: ServiceContext, env, processes, browser
):
    """Two Bindings; the member is granted one repository: the page lists that Binding
    only, and the other's page is not found, as the API answers."""
    mine = bind(
        dctx,
        SyncRequest(
            f"local:{generate(tmp_path / 'a.git', commits=2, branches=1, tags=1)}",
            f"local:{tmp_path / 'a-copy.git'}",
        ),
    )
    theirs = bind(
        dctx,
        SyncRequest(
            f"local:{generate(tmp_path / 'b.git', commits=2, branches=1, tags=1)}",
            f"local:{tmp_path / 'b-copy.git'}",
        ),
    )
    member = create_user(dctx, "mel")
    grant(dctx, member.id, mine.a_provider, mine.a_repository_id)
    port = free_port()
    processes.append(start_api(env, tmp_path, port))
    base = f"http://127.0.0.1:{port}"
    wait = WebDriverWait(browser, 30)

    browser.get(base + "/signin")
    browser.find_element(By.ID, "token").send_keys(issue_token(dctx, member.id))
    browser.find_element(By.ID, "signin").click()
    wait.until(ec.presence_of_element_located((By.ID, f"binding-{mine.id}")))
    assert text_of(browser, "who") == "mel (member)"
    assert not browser.find_elements(By.ID, f"binding-{theirs.id}")
    assert theirs.a_locator not in browser.page_source
    assert not browser.find_elements(By.ID, "create-binding")  # admins create Bindings

    # Offline machines: the page and Swagger UI load nothing from another host.
    for path in ("/", "/api/ext/v1/sync/docs"):
        browser.get(base + path)
        if path.endswith("/docs"):
            title = wait.until(
                ec.presence_of_element_located((By.CSS_SELECTOR, ".swagger-ui .info .title"))
            )
            assert "reposync" in title.text
        loaded = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)"
        )
        assert loaded, path
        assert all(name.startswith(base + "/") for name in loaded), loaded

    browser.get(f"{base}/bindings/{theirs.id}")
    problem = wait.until(ec.presence_of_element_located((By.ID, "problem")))
    assert "not_found" in problem.text or "does not exist" in problem.text
    assert theirs.a_locator not in browser.page_source


def test_an_overview_of_500_bindings_in_the_browser(
    tmp_path: Path, dctx: ServiceContext, env, processes, browser
):
    """500 Bindings in every state: every row is in the page, the tally's filter and the
    sort work, the rows refresh in place, and the Binding, Run and error pages render;
    each is kept as a screenshot."""
    ids = seed(dctx, 500)
    port = free_port()
    processes.append(start_api(env, tmp_path, port))
    base = f"http://127.0.0.1:{port}"
    wait = WebDriverWait(browser, 60)
    browser.get(base + "/signin")
    browser.find_element(By.ID, "token").send_keys(
        issue_token(dctx, create_user(dctx, "ops", role="admin").id)
    )
    browser.find_element(By.ID, "signin").click()
    wait.until(ec.presence_of_element_located((By.ID, "overview")))
    rows = browser.find_elements(By.CSS_SELECTOR, "#overview-rows tr[data-state]")
    assert len(rows) == 500
    assert rows[0].get_attribute("data-state") == "failed"  # worst first
    assert "failed" in rows[0].find_element(By.CSS_SELECTOR, "td.state").text  # a word too
    screenshot(browser, "overview-500")
    screenshot(browser, "overview-500-first-screen", whole=False)

    # The rows refresh in place while Runs are active (overview.js, every 5 s).
    mark_document(browser)
    wait.until(lambda b: b.find_element(By.ID, "overview-rows").get_attribute("data-refreshed"))
    assert browser.execute_script(SAME_DOCUMENT), "the page reloaded instead of updating"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#overview-rows tr[data-state]")) == 500

    # The tally filters by state; the form sorts and finds.
    browser.find_element(By.CSS_SELECTOR, '#tally a[data-state="attention"]').click()
    wait.until(ec.url_contains("state=attention"))
    states = {
        r.get_attribute("data-state")
        for r in browser.find_elements(By.CSS_SELECTOR, "#overview-rows tr[data-state]")
    }
    assert states == {"attention"}
    screenshot(browser, "overview-attention")
    browser.get(f"{base}/?q=service-{ids[7]:04d}&sort=name")
    [row] = browser.find_elements(By.CSS_SELECTOR, "#overview-rows tr[data-state]")
    assert row.get_attribute("id") == f"binding-{ids[7]}"

    # A Binding with a history: its chart has a bar per Run.
    browser.get(f"{base}/bindings/{ids[1]}")
    bars = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "#history a[data-run]") or None)
    assert len(bars) == 4
    screenshot(browser, "binding-history")
    with dctx.db.session() as session:
        failed = session.execute(
            select(Run.id).where(Run.binding_id == ids[1], Run.status == "failed")
        ).scalar_one()
    browser.get(f"{base}/runs/{failed}")
    wait.until(ec.presence_of_element_located((By.ID, "retry")))
    screenshot(browser, "run-failed")

    browser.get(f"{base}/no/such/page")
    problem = wait.until(ec.presence_of_element_located((By.ID, "problem")))
    assert problem.get_attribute("data-status") == "404"
    screenshot(browser, "error-404")
