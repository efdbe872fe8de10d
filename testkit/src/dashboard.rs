//! The emulator's dashboard as a program sees it: a session logged in
//! through the printed link, its pages and its forms.

use cf_queues_emulator::EmulatorHandle;

/// A browser's session, without the browser: the cookie the link gave.
#[derive(Debug, Clone)]
pub struct Session {
    /// An HTTP client that never follows redirects (an action answers with one).
    pub http: reqwest::Client,
    /// `cfq_dashboard=<session id>`.
    pub cookie: String,
    /// `http://<address>` of the emulator.
    pub origin: String,
}

impl Session {
    /// Logs in through `handle`'s dashboard link.
    pub async fn login(handle: &EmulatorHandle) -> Session {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("an HTTP client");
        let link = handle
            .dashboard_url()
            .expect("the emulator serves a dashboard");
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
            origin: format!("http://{}", handle.local_addr()),
        }
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

    /// The form token written into the page at `path`.
    pub async fn form_token(&self, path: &str) -> String {
        let html = self
            .get(path)
            .send()
            .await
            .expect("the page answered")
            .text()
            .await
            .expect("HTML");
        html.split(r#"name="token" value=""#)
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a form token on the page")
            .to_owned()
    }
}
