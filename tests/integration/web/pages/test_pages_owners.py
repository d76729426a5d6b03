"""The page's whole owners (``/owners``) with Flask's test client: admin only, the form
binds two owners (dry run: the report, nothing written), an owner binding's page shows
its last pass repository by repository, a pass can be asked for or dry-run there, and
forgetting it keeps its Bindings."""

from __future__ import annotations

from reposync.models import Binding, OwnerBinding
from reposync.service import owners
from tests.integration.service.test_owners import count
from tests.integration.web.pages.test_pages import csrf_of, sign_in


def test_owners_are_for_admins_only(client, tokens):
    """A member gets the problem page (403) and no Owners link; an admin the form."""
    sign_in(client, tokens.member)
    assert 'id="nav-owners"' not in client.get("/").get_data(as_text=True)
    assert client.get("/owners").status_code == 403
    other = client.application.test_client()
    sign_in(other, tokens.admin)
    page = other.get("/owners").get_data(as_text=True)
    assert 'id="bind-owners"' in page
    assert 'id="nav-owners"' in page


def test_the_dry_run_box_shows_the_report_and_writes_nothing(client, ctx, tokens, owners_dirs):
    """With the dry-run box the form answers each repository's would-be outcome, and
    leaves no owner binding, Binding or repository behind."""
    source, target = owners_dirs
    sign_in(client, tokens.admin)
    token = csrf_of(client.get("/owners").get_data(as_text=True))
    form = {
        "csrf": token,
        "source": f"local:{source}",
        "target": f"local:{target}",
        "dry_run": "1",
    }
    page = client.post("/owners", data=form)
    assert page.status_code == 200, page.get_data(as_text=True)
    html = page.get_data(as_text=True)
    assert 'id="dry-run-note"' in html
    assert html.count('class="outcome">would_create<') == 2
    # the tokens' fixture made one Binding: still the only one
    assert (count(ctx, OwnerBinding), count(ctx, Binding), list(target.iterdir())) == (0, 1, [])


def test_binding_owners_leads_to_their_page_and_its_pass(client, ctx, tokens, owners_dirs):
    """The form creates the owner binding (its pass queued); once a worker ran the pass,
    the page lists each repository's outcome and its Binding; Pass now queues another,
    Dry run shows one, Forget removes the owner binding and keeps the Bindings."""
    source, target = owners_dirs
    sign_in(client, tokens.admin)
    token = csrf_of(client.get("/owners").get_data(as_text=True))
    created = client.post(
        "/owners",
        data={"csrf": token, "source": f"local:{source}", "target": f"local:{target}"},
    )
    assert created.status_code == 302, created.get_data(as_text=True)
    where = created.headers["Location"]
    owner_id = int(where.rsplit("/", 1)[1])
    assert 'id="no-pass"' in client.get(where).get_data(as_text=True)
    owners.run_pass(ctx, owner_id)  # as the worker the pass was handed to
    page = client.get(where).get_data(as_text=True)
    assert page.count('class="outcome">created<') == 2
    assert 'id="repository-app"' in page
    dry = client.post(
        f"/owners/{owner_id}/passes", data={"csrf": token, "action": "dry_run"}
    ).get_data(as_text=True)
    assert dry.count('class="outcome">already_bound<') == 2
    queued = client.post(f"/owners/{owner_id}/passes", data={"csrf": token, "action": "pass"})
    assert queued.status_code == 302
    assert owners.get_owner_binding(ctx, owner_id).next_pass_at is not None
    forgotten = client.post(f"/owners/{owner_id}/delete", data={"csrf": token})
    assert forgotten.status_code == 302
    assert (count(ctx, OwnerBinding), count(ctx, Binding)) == (0, 3)  # the fixture's + two


def test_a_form_without_its_csrf_token_changes_nothing(client, ctx, tokens, owners_dirs):
    """The bind form posted without its CSRF token is refused (400), nothing bound."""
    source, target = owners_dirs
    sign_in(client, tokens.admin)
    response = client.post(
        "/owners", data={"source": f"local:{source}", "target": f"local:{target}"}
    )
    assert response.status_code == 400
    assert count(ctx, OwnerBinding) == 0
