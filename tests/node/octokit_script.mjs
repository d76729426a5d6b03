// @octokit/rest drives the GitHub test server through the calls an everyday integration
// makes (tests/fakes/test_github_fake_octokit.py runs it). One argument, JSON:
//   {"baseUrl": ..., "proxy": "http://127.0.0.1:<port>" or "", "acme": token, "bob": token}
// A failing call is recorded and the script goes on; it prints one JSON document:
//   {"passed": [name, ...], "failed": [[name, message], ...]}
// With "proxy", requests for GitHub's hosts by name (*.github.test) go through that port
// as through an HTTP proxy (an absolute-form request target), as Octokit's documentation
// has it for proxies: a fetch of one's own passed as `request.fetch`.

import http from "node:http";
import { Octokit } from "@octokit/rest";

const config = JSON.parse(process.argv[2]);
const OWNER = "acme";
const REPO = "widgets";
const FILE = "feature_work.txt";
const passed = [];
const failed = [];

async function call(name, body) {
  try {
    await body();
    passed.push(name);
  } catch (error) {
    const detail = error.response ? ` ${JSON.stringify(error.response.data)}` : "";
    failed.push([name, `${error.name}: ${error.message}${detail}`.slice(0, 400)]);
  }
}

function check(condition, what) {
  if (!condition) throw new Error(`expected ${what}`);
}

async function refused(status, body) {
  try {
    await body();
  } catch (error) {
    check(error.name === "HttpError" && error.status === status, `RequestError ${status}`);
    return error;
  }
  throw new Error(`expected RequestError ${status}, got success`);
}

// -- a fetch through the proxy port ---------------------------------------------------------

function send(proxy, url, method, headers, body) {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: proxy.hostname, port: proxy.port, method, path: url.href, headers },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () => resolve([response, Buffer.concat(chunks)]));
        response.on("error", reject);
      },
    );
    request.on("error", reject);
    if (body) request.write(body);
    request.end();
  });
}

function proxiedFetch(proxyUrl) {
  const proxy = new URL(proxyUrl);
  return async function fetchThroughProxy(input, init = {}) {
    let url = new URL(String(input));
    if (!url.hostname.endsWith("github.test")) return fetch(input, init);
    let method = (init.method || "GET").toUpperCase();
    let body = init.body == null ? null : Buffer.from(init.body);
    const headers = Object.fromEntries(new Headers(init.headers || {}));
    for (let hop = 0; hop < 5; hop += 1) {
      headers.host = url.host;
      if (body) headers["content-length"] = String(body.length);
      const [response, data] = await send(proxy, url, method, headers, body);
      const location = response.headers.location;
      if ([301, 302, 303, 307, 308].includes(response.statusCode) && location && init.redirect !== "manual") {
        const next = new URL(location, url);
        if (next.origin !== url.origin) delete headers.authorization; // as fetch does
        if (response.statusCode === 303) [method, body] = ["GET", null];
        url = next;
        continue;
      }
      const answer = new Headers();
      for (const [key, value] of Object.entries(response.headers)) {
        for (const one of [].concat(value)) answer.append(key, one);
      }
      const empty = [204, 205, 304].includes(response.statusCode);
      return new Response(empty ? null : data, { status: response.statusCode, headers: answer });
    }
    throw new Error("too many redirects");
  };
}

function client(token) {
  const options = { auth: token, baseUrl: config.baseUrl, userAgent: "reposync-tests" };
  if (config.proxy) options.request = { fetch: proxiedFetch(config.proxy) };
  return new Octokit(options);
}

// -- the script -----------------------------------------------------------------------------

const g = client(config.acme);
const bob = client(config.bob);
const repo = { owner: OWNER, repo: REPO };
const state = {};

// repositories
await call("repos.get", async () => {
  const { data } = await g.rest.repos.get(repo);
  check(data.default_branch === "main", "default branch main");
});
await call("repos.update", async () => {
  const { data } = await g.rest.repos.update({ ...repo, description: "Widgets, in sync" });
  check(data.description === "Widgets, in sync", "the new description");
});
await call("repos.listForAuthenticatedUser", async () => {
  const { data } = await g.rest.repos.listForAuthenticatedUser();
  check(data.some((r) => r.full_name === "acme/widgets"), "acme/widgets listed");
});
await call("users.getAuthenticated", async () => {
  const { data } = await g.rest.users.getAuthenticated();
  check(data.login === "acme", "acme");
});
await call("users.getByUsername", async () => {
  const { data } = await g.rest.users.getByUsername({ username: "acme" });
  check(data.type === "User", "a user");
});
await call("repos.listForUser", async () => {
  const { data } = await g.rest.repos.listForUser({ username: "acme" });
  check(data.map((r) => r.full_name).join() === "acme/widgets", "acme's repositories");
});
await call("orgs.get", async () => {
  const { data } = await g.rest.orgs.get({ org: "acme-org" });
  check(data.login === "acme-org", "the organization");
});
await call("repos.listForOrg", async () => {
  const { data } = await g.rest.repos.listForOrg({ org: "acme-org" });
  check(data.map((r) => r.full_name).join() === "acme-org/tools", "the organization's repos");
});
await call("conditional GET (If-None-Match): 304, no quota spent", async () => {
  const first = await g.rest.repos.get(repo);
  const remaining = first.headers["x-ratelimit-remaining"];
  const error = await refused(304, () =>
    g.rest.repos.get({ ...repo, headers: { "if-none-match": first.headers.etag } }),
  );
  check(error.response.headers["x-ratelimit-remaining"] === remaining, "the same remaining");
});
await call("repos.get (missing): RequestError 404", async () => {
  const error = await refused(404, () => g.rest.repos.get({ owner: OWNER, repo: "missing" }));
  check(error.response.data.message === "Not Found", "GitHub's message");
  check(error.response.data.documentation_url.startsWith("https://docs.github.com/"), "docs");
});

// labels
await call("issues.createLabel", async () => {
  const { data } = await g.rest.issues.createLabel({ ...repo, name: "bug", color: "d73a4a" });
  check(data.name === "bug", "bug");
});
await call("issues.createLabel (no color)", async () => {
  await g.rest.issues.createLabel({ ...repo, name: "triage" });
});
await call("issues.createLabel (exists): RequestError 422", async () => {
  const error = await refused(422, () => g.rest.issues.createLabel({ ...repo, name: "bug" }));
  check(error.response.data.message === "Validation Failed", "Validation Failed");
  check(error.response.data.errors[0].code === "already_exists", "already_exists");
});
await call("issues.listLabelsForRepo", async () => {
  const { data } = await g.rest.issues.listLabelsForRepo(repo);
  check(data.length === 2, "two labels");
});
await call("issues.getLabel", async () => {
  const { data } = await g.rest.issues.getLabel({ ...repo, name: "bug" });
  check(data.color === "d73a4a", "its color");
});
await call("issues.updateLabel", async () => {
  const { data } = await g.rest.issues.updateLabel({ ...repo, name: "bug", color: "b60205" });
  check(data.color === "b60205", "the new color");
});
await call("issues.deleteLabel", async () => {
  await g.rest.issues.deleteLabel({ ...repo, name: "triage" });
});

// milestones
await call("issues.createMilestone", async () => {
  const { data } = await g.rest.issues.createMilestone({
    ...repo,
    title: "v1.0",
    due_on: "2026-03-01T12:00:00Z",
  });
  state.milestone = data.number;
});
await call("issues.listMilestones", async () => {
  const { data } = await g.rest.issues.listMilestones({ ...repo, state: "all" });
  check(data.length === 1, "one milestone");
});
await call("issues.getMilestone", async () => {
  const { data } = await g.rest.issues.getMilestone({ ...repo, milestone_number: state.milestone });
  check(data.title === "v1.0", "v1.0");
});
await call("issues.updateMilestone", async () => {
  const { data } = await g.rest.issues.updateMilestone({
    ...repo,
    milestone_number: state.milestone,
    description: "First",
  });
  check(data.description === "First", "the description");
});
await call("issues.deleteMilestone", async () => {
  const { data } = await g.rest.issues.createMilestone({ ...repo, title: "scratch" });
  await g.rest.issues.deleteMilestone({ ...repo, milestone_number: data.number });
});

// issues
await call("issues.create", async () => {
  const { data } = await g.rest.issues.create({
    ...repo,
    title: "Crash on start",
    body: "It crashes.",
    labels: ["bug"],
    milestone: state.milestone,
    assignees: ["acme"],
  });
  state.issue = data.number;
});
await call("issues.create (four more)", async () => {
  for (let n = 0; n < 4; n += 1) await g.rest.issues.create({ ...repo, title: `Chore ${n}` });
});
await call("issues.get", async () => {
  const { data } = await g.rest.issues.get({ ...repo, issue_number: state.issue });
  check(data.labels.map((l) => l.name).join() === "bug", "its label");
});
await call("issues.listForRepo (labels, sort, direction)", async () => {
  const { data } = await g.rest.issues.listForRepo({
    ...repo,
    labels: "bug",
    sort: "created",
    direction: "asc",
  });
  check(data.map((i) => i.number).join() === String(state.issue), "the labelled issue");
});
await call("issues.listForRepo (milestone)", async () => {
  const { data } = await g.rest.issues.listForRepo({ ...repo, milestone: String(state.milestone) });
  check(data.length === 1, "one issue");
});
await call("issues.listForRepo (assignee, creator)", async () => {
  const { data } = await g.rest.issues.listForRepo({ ...repo, assignee: "acme", creator: "acme" });
  check(data.length === 1, "one issue");
});
await call("issues.listForRepo (since)", async () => {
  const since = new Date(Date.now() - 3600 * 1000).toISOString();
  const { data } = await g.rest.issues.listForRepo({ ...repo, since });
  check(data.length === 5, "five issues");
});
await call("paginate (per_page 2, Link headers)", async () => {
  const all = await g.paginate(g.rest.issues.listForRepo, { ...repo, state: "all", per_page: 2 });
  check(new Set(all.map((i) => i.number)).size === 5, "five issues over three pages");
});
await call("paginate.iterator", async () => {
  let pages = 0;
  const options = { ...repo, state: "all", per_page: 2 };
  for await (const page of g.paginate.iterator(g.rest.issues.listForRepo, options)) {
    check(page.status === 200, "200");
    pages += 1;
  }
  check(pages === 3, "three pages");
});
await call("issues.update", async () => {
  const { data } = await g.rest.issues.update({ ...repo, issue_number: state.issue, title: "Crash" });
  check(data.title === "Crash", "the new title");
});
await call("issues.update (close as not planned)", async () => {
  const { data } = await g.rest.issues.update({
    ...repo,
    issue_number: state.issue,
    state: "closed",
    state_reason: "not_planned",
  });
  check(data.state_reason === "not_planned", "not_planned");
});
await call("issues.update (reopen)", async () => {
  const { data } = await g.rest.issues.update({ ...repo, issue_number: state.issue, state: "open" });
  check(data.state === "open", "open");
});
await call("issues.lock", async () => {
  await g.rest.issues.lock({ ...repo, issue_number: state.issue, lock_reason: "resolved" });
});
await call("issues.unlock", async () => {
  await g.rest.issues.unlock({ ...repo, issue_number: state.issue });
});
await call("issues.addLabels", async () => {
  const { data } = await g.rest.issues.addLabels({
    ...repo,
    issue_number: state.issue,
    labels: ["needs-info"],
  });
  check(data.length === 2, "two labels");
});
await call("POST labels with a bare array (request data)", async () => {
  const { data } = await g.request("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", {
    ...repo,
    issue_number: state.issue,
    data: ["docs"],
  });
  check(data.length === 3, "three labels");
});
await call("issues.setLabels", async () => {
  const { data } = await g.rest.issues.setLabels({
    ...repo,
    issue_number: state.issue,
    labels: ["bug", "docs"],
  });
  check(data.length === 2, "two labels");
});
await call("issues.listLabelsOnIssue", async () => {
  const { data } = await g.rest.issues.listLabelsOnIssue({ ...repo, issue_number: state.issue });
  check(data.map((l) => l.name).sort().join() === "bug,docs", "bug and docs");
});
await call("issues.removeLabel", async () => {
  await g.rest.issues.removeLabel({ ...repo, issue_number: state.issue, name: "docs" });
});
await call("issues.removeAllLabels", async () => {
  await g.rest.issues.removeAllLabels({ ...repo, issue_number: state.issue });
});
await call("issues.get (missing): RequestError 404", async () => {
  await refused(404, () => g.rest.issues.get({ ...repo, issue_number: 999 }));
});

// issue comments
await call("issues.createComment", async () => {
  const { data } = await g.rest.issues.createComment({
    ...repo,
    issue_number: state.issue,
    body: "Seen it too.",
  });
  state.comment = data.id;
});
await call("issues.listComments", async () => {
  const { data } = await g.rest.issues.listComments({ ...repo, issue_number: state.issue });
  check(data.length === 1, "one comment");
});
await call("issues.listCommentsForRepo", async () => {
  const { data } = await g.rest.issues.listCommentsForRepo({ ...repo, sort: "created" });
  check(data.length === 1, "one comment");
});
await call("issues.getComment", async () => {
  const { data } = await g.rest.issues.getComment({ ...repo, comment_id: state.comment });
  check(data.body === "Seen it too.", "its body");
});
await call("issues.updateComment", async () => {
  const { data } = await g.rest.issues.updateComment({
    ...repo,
    comment_id: state.comment,
    body: "Seen it on 1.2.",
  });
  check(data.body === "Seen it on 1.2.", "the new body");
});
await call("issues.deleteComment", async () => {
  await g.rest.issues.deleteComment({ ...repo, comment_id: state.comment });
});

// pull requests
await call("pulls.create", async () => {
  const { data } = await g.rest.pulls.create({
    ...repo,
    title: "Feature",
    head: "feature",
    base: "main",
    body: "Adds it.",
  });
  state.pull = data.number;
  state.head = data.head.sha;
});
await call("pulls.create (again): RequestError 422", async () => {
  const error = await refused(422, () =>
    g.rest.pulls.create({ ...repo, title: "Again", head: "feature", base: "main" }),
  );
  check(error.response.data.errors[0].message.includes("already exists"), "already exists");
});
await call("pulls.get", async () => {
  const { data } = await g.rest.pulls.get({ ...repo, pull_number: state.pull });
  check(data.mergeable === true, "mergeable");
});
await call("pulls.list (state, sort, base)", async () => {
  const { data } = await g.rest.pulls.list({ ...repo, state: "open", sort: "created", base: "main" });
  check(data.length === 1, "one pull request");
});
await call("pulls.list (head)", async () => {
  const { data } = await g.rest.pulls.list({ ...repo, head: "acme:feature" });
  check(data.length === 1, "one pull request");
});
await call("pulls.update", async () => {
  const { data } = await g.rest.pulls.update({ ...repo, pull_number: state.pull, title: "Done" });
  check(data.title === "Done", "the new title");
});
await call("pulls.checkIfMerged (not merged): RequestError 404", async () => {
  await refused(404, () => g.rest.pulls.checkIfMerged({ ...repo, pull_number: state.pull }));
});
await call("pulls.requestReviewers", async () => {
  await g.rest.pulls.requestReviewers({ ...repo, pull_number: state.pull, reviewers: ["bob"] });
});
await call("pulls.listRequestedReviewers", async () => {
  const { data } = await g.rest.pulls.listRequestedReviewers({ ...repo, pull_number: state.pull });
  check(data.users.map((u) => u.login).join() === "bob", "bob");
});
await call("pulls.removeRequestedReviewers", async () => {
  await g.rest.pulls.removeRequestedReviewers({
    ...repo,
    pull_number: state.pull,
    reviewers: ["bob"],
  });
});

// reviews (bob reviews acme's pull request)
await call("pulls.createReview (with comments)", async () => {
  const { data } = await bob.rest.pulls.createReview({
    ...repo,
    pull_number: state.pull,
    body: "A few notes.",
    event: "COMMENT",
    comments: [{ path: FILE, line: 1, body: "Spell it out?" }],
  });
  check(data.state === "COMMENTED", "COMMENTED");
  state.review = data.id;
});
await call("pulls.createReview (pending)", async () => {
  const { data } = await bob.rest.pulls.createReview({
    ...repo,
    pull_number: state.pull,
    body: "Reading.",
  });
  check(data.state === "PENDING", "PENDING");
  state.pending = data.id;
});
await call("pulls.updateReview", async () => {
  await bob.rest.pulls.updateReview({
    ...repo,
    pull_number: state.pull,
    review_id: state.pending,
    body: "Read.",
  });
});
await call("pulls.submitReview", async () => {
  const { data } = await bob.rest.pulls.submitReview({
    ...repo,
    pull_number: state.pull,
    review_id: state.pending,
    event: "COMMENT",
  });
  check(data.state === "COMMENTED", "COMMENTED");
});
await call("pulls.deletePendingReview", async () => {
  const { data } = await bob.rest.pulls.createReview({ ...repo, pull_number: state.pull });
  await bob.rest.pulls.deletePendingReview({ ...repo, pull_number: state.pull, review_id: data.id });
});
await call("pulls.listReviews", async () => {
  const { data } = await g.rest.pulls.listReviews({ ...repo, pull_number: state.pull });
  check(data.length === 2, "two reviews");
});
await call("pulls.getReview", async () => {
  const { data } = await g.rest.pulls.getReview({
    ...repo,
    pull_number: state.pull,
    review_id: state.review,
  });
  check(data.body === "A few notes.", "its body");
});
await call("pulls.listCommentsForReview", async () => {
  const { data } = await g.rest.pulls.listCommentsForReview({
    ...repo,
    pull_number: state.pull,
    review_id: state.review,
  });
  check(data.length === 1, "one comment");
});
await call("pulls.createReview (approve)", async () => {
  const { data } = await bob.rest.pulls.createReview({
    ...repo,
    pull_number: state.pull,
    event: "APPROVE",
  });
  state.approval = data.id;
});
await call("pulls.dismissReview", async () => {
  const { data } = await g.rest.pulls.dismissReview({
    ...repo,
    pull_number: state.pull,
    review_id: state.approval,
    message: "The branch changed.",
  });
  check(data.state === "DISMISSED", "DISMISSED");
});

// review comments
await call("pulls.createReviewComment", async () => {
  const { data } = await g.rest.pulls.createReviewComment({
    ...repo,
    pull_number: state.pull,
    body: "Why this name?",
    commit_id: state.head,
    path: FILE,
    line: 1,
    side: "RIGHT",
  });
  state.reviewComment = data.id;
});
await call("pulls.createReplyForReviewComment", async () => {
  const { data } = await bob.rest.pulls.createReplyForReviewComment({
    ...repo,
    pull_number: state.pull,
    comment_id: state.reviewComment,
    body: "It reads better.",
  });
  check(data.in_reply_to_id === state.reviewComment, "a reply");
  state.reply = data.id;
});
await call("pulls.listReviewComments", async () => {
  const { data } = await g.rest.pulls.listReviewComments({ ...repo, pull_number: state.pull });
  check(data.length === 3, "three comments");
});
await call("pulls.listReviewCommentsForRepo", async () => {
  const { data } = await g.rest.pulls.listReviewCommentsForRepo({ ...repo, sort: "created" });
  check(data.length === 3, "three comments");
});
await call("pulls.getReviewComment", async () => {
  const { data } = await g.rest.pulls.getReviewComment({ ...repo, comment_id: state.reviewComment });
  check(data.line === 1, "line 1");
});
await call("pulls.updateReviewComment", async () => {
  const { data } = await g.rest.pulls.updateReviewComment({
    ...repo,
    comment_id: state.reviewComment,
    body: "Why, exactly?",
  });
  check(data.body === "Why, exactly?", "the new body");
});
await call("pulls.deleteReviewComment", async () => {
  await bob.rest.pulls.deleteReviewComment({ ...repo, comment_id: state.reply });
});
await call("pulls.merge", async () => {
  const { data } = await g.rest.pulls.merge({ ...repo, pull_number: state.pull });
  check(data.merged === true, "merged");
});
await call("pulls.checkIfMerged (merged)", async () => {
  const { status } = await g.rest.pulls.checkIfMerged({ ...repo, pull_number: state.pull });
  check(status === 204, "204");
});

// releases and assets
const payload = Buffer.from("widgets binary\n".repeat(100));
await call("repos.createRelease", async () => {
  const { data } = await g.rest.repos.createRelease({ ...repo, tag_name: "v1.0.0", name: "1.0.0" });
  state.release = data;
});
await call("repos.createRelease (draft)", async () => {
  const { data } = await g.rest.repos.createRelease({ ...repo, tag_name: "v1.1.0", draft: true });
  state.draft = data.id;
});
await call("repos.getRelease", async () => {
  const { data } = await g.rest.repos.getRelease({ ...repo, release_id: state.release.id });
  check(data.name === "1.0.0", "1.0.0");
});
await call("repos.getReleaseByTag", async () => {
  const { data } = await g.rest.repos.getReleaseByTag({ ...repo, tag: "v1.0.0" });
  check(data.id === state.release.id, "the release");
});
await call("repos.listReleases", async () => {
  const { data } = await g.rest.repos.listReleases(repo);
  check(data.length === 2, "two releases");
});
await call("repos.getLatestRelease", async () => {
  const { data } = await g.rest.repos.getLatestRelease(repo);
  check(data.id === state.release.id, "the published one");
});
await call("repos.updateRelease", async () => {
  const { data } = await g.rest.repos.updateRelease({
    ...repo,
    release_id: state.release.id,
    body: "Stable.",
  });
  check(data.body === "Stable.", "the new body");
});
await call("repos.uploadReleaseAsset (url: upload_url)", async () => {
  const { data } = await g.rest.repos.uploadReleaseAsset({
    ...repo,
    release_id: state.release.id,
    url: state.release.upload_url,
    name: "widgets-1.0.0.bin",
    data: payload,
    headers: { "content-type": "application/octet-stream", "content-length": payload.length },
  });
  check(data.size === payload.length, "its size");
  state.asset = data.id;
});
await call("repos.listReleaseAssets", async () => {
  const { data } = await g.rest.repos.listReleaseAssets({ ...repo, release_id: state.release.id });
  check(data.length === 1, "one asset");
});
await call("repos.getReleaseAsset", async () => {
  const { data } = await g.rest.repos.getReleaseAsset({ ...repo, asset_id: state.asset });
  check(data.name === "widgets-1.0.0.bin", "its name");
});
await call("repos.getReleaseAsset (application/octet-stream: the bytes)", async () => {
  const { data } = await g.rest.repos.getReleaseAsset({
    ...repo,
    asset_id: state.asset,
    headers: { accept: "application/octet-stream" },
  });
  check(Buffer.from(data).equals(payload), "the uploaded bytes");
});
await call("repos.updateReleaseAsset", async () => {
  const { data } = await g.rest.repos.updateReleaseAsset({
    ...repo,
    asset_id: state.asset,
    label: "Linux",
  });
  check(data.label === "Linux", "the label");
});
await call("repos.deleteReleaseAsset", async () => {
  await g.rest.repos.deleteReleaseAsset({ ...repo, asset_id: state.asset });
});
await call("repos.deleteRelease", async () => {
  await g.rest.repos.deleteRelease({ ...repo, release_id: state.draft });
});

// git references
await call("git.getRef", async () => {
  const { data } = await g.rest.git.getRef({ ...repo, ref: "heads/main" });
  state.main = data.object.sha;
});
await call("git.listMatchingRefs", async () => {
  const { data } = await g.rest.git.listMatchingRefs({ ...repo, ref: "heads/" });
  check(data.map((r) => r.ref).join() === "refs/heads/feature,refs/heads/main", "two branches");
});
await call("git.createRef", async () => {
  await g.rest.git.createRef({ ...repo, ref: "refs/heads/backup", sha: state.main });
});
await call("git.updateRef", async () => {
  await g.rest.git.updateRef({ ...repo, ref: "heads/backup", sha: state.head, force: true });
});
await call("git.deleteRef", async () => {
  await g.rest.git.deleteRef({ ...repo, ref: "heads/backup" });
});

// rate limit and scopes
await call("rateLimit.get", async () => {
  const { data } = await g.rest.rateLimit.get();
  check(data.resources.core.limit === 5000, "5000 an hour");
});
await call("x-ratelimit-* headers", async () => {
  const { headers } = await g.rest.repos.get(repo);
  check(Number(headers["x-ratelimit-limit"]) === 5000, "the limit");
  check(Number(headers["x-ratelimit-remaining"]) < 5000, "some spent");
  check(Number(headers["x-ratelimit-reset"]) > Date.now() / 1000, "a reset ahead");
  check(headers["x-ratelimit-resource"] === "core", "core");
});
await call("x-oauth-scopes header", async () => {
  const { headers } = await g.rest.repos.get(repo);
  check(headers["x-oauth-scopes"] === "repo", "repo");
  check(headers["x-accepted-oauth-scopes"] === "repo", "repo accepted");
});

process.stdout.write(JSON.stringify({ passed, failed }));
