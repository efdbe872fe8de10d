//! The emulator's dashboard as a program sees it: a session logged in
//! through the printed link, its pages and its forms.

use cf_queues_emulator::EmulatorHandle;

/// A browser's session, without the browser: the cookie the link gave.
#[derive(Debug, Clone)]
pub struct Session {
    /// An HTTP client that never follows redirects (an action answers with one).
    pub http: reqwest::Client,
    /// `cfq_dashboard_<the emulator's own>=<session id>`.
    pub cookie: String,
    /// `http://<address>` of the emulator.
    pub origin: String,
}

impl Session {
    /// Logs in through `handle`'s dashboard link.
    pub async fn login(handle: &EmulatorHandle) -> Session {
        let link = handle
            .dashboard_url()
            .expect("the emulator serves a dashboard");
        Session::login_link(link).await
    }

    /// Logs in through a dashboard `link` (`http://ADDRESS/_dashboard/login?key=…`),
    /// as `cfq emulator` prints it.
    pub async fn login_link(link: &str) -> Session {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        let origin = link
            .split("/_dashboard")
            .next()
            .expect("a dashboard link")
            .to_owned();
        let answer = http.get(link).send().await.expect("the login answered");
        let cookie = answer
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .expect("a session cookie")
            .to_owned();
        Session {
            http,
            cookie,
            origin,
        }
    }

    /// Posts the form `fields` (`name=value&…`, URL-encoded) to the action
    /// `action`, with the form token of the page `page`: the status, and
    /// the note the page it led to shows (empty without one).
    pub async fn act(&self, page: &str, action: &str, fields: &str) -> (u16, String) {
        let token = self.form_token(page).await;
        let answer = self
            .post_form(action, format!("token={token}&{fields}"), true)
            .send()
            .await
            .expect("the action answered");
        let status = answer.status().as_u16();
        let Some(location) = answer
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
        else {
            return (status, String::new());
        };
        let html = self.page(&location).await;
        let note = html
            .split(r#"<p class="done" role="status">"#)
            .nth(1)
            .and_then(|rest| rest.split("</p>").next())
            .unwrap_or_default()
            .to_owned();
        (status, note)
    }

    /// `GET` of a dashboard `path` (such as `/_dashboard/`) in the session.
    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.origin))
            .header("cookie", &self.cookie)
    }

    /// `POST` of a form `body` to a dashboard `path`, with the session's
    /// cookie only if `with_cookie`.
    pub fn post_form(
        &self,
        path: &str,
        body: String,
        with_cookie: bool,
    ) -> reqwest::RequestBuilder {
        let request = self
            .http
            .post(format!("{}{path}", self.origin))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        if with_cookie {
            request.header("cookie", &self.cookie)
        } else {
            request
        }
    }

    /// The HTML of the page at `path`, which must answer 200.
    pub async fn page(&self, path: &str) -> String {
        let answer = self.get(path).send().await.expect("the page answered");
        assert_eq!(answer.status(), 200, "{path}");
        answer.text().await.expect("HTML")
    }

    /// The sequence numbers of the messages a queue's page at `path` lists
    /// (what its forms select them by).
    pub async fn listed(&self, path: &str) -> Vec<String> {
        self.page(path)
            .await
            .split(r#"name="m" value=""#)
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .map(str::to_owned)
            .collect()
    }

    /// The form token written into the page at `path`.
    pub async fn form_token(&self, path: &str) -> String {
        let html = self.page(path).await;
        html.split(r#"name="token" value=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a form token on the page")
            .to_owned()
    }
}
