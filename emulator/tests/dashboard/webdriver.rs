//! A thin WebDriver client: chromedriver started as a child process,
//! Debian's headless Chromium behind it, and the few commands the tests
//! use, as JSON over HTTP (the W3C protocol).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The key of an element reference in WebDriver's answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where the browser and its driver are: `CHROMIUM` and `CHROMEDRIVER`,
/// else Debian's paths. `None` when either is missing.
pub fn find_browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let driver = std::env::var_os("CHROMEDRIVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromedriver"));
    (chromium.exists() && driver.exists()).then_some((chromium, driver))
}

/// One browser session.
pub struct Browser {
    driver: Child,
    http: reqwest::Client,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and a headless Chromium session.
    pub async fn start(chromium: &Path, driver: &Path) -> Result<Browser> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let profile = tempfile::tempdir()?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()?;
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().await.is_err() {
            if started.elapsed() > Duration::from_secs(20) {
                return Err("chromedriver did not start".into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let capabilities = json!({
            "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chromium,
                    "args": [
                        "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--disable-quic", "--no-first-run",
                        format!("--user-data-dir={}", profile.path().display()),
                    ],
                },
            }},
        });
        let answer: Value = http
            .post(format!("{base}/session"))
            .json(&capabilities)
            .send()
            .await?
            .json()
            .await?;
        let session = answer["value"]["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session: {answer}"))?
            .to_owned();
        Ok(Browser {
            driver: child,
            http,
            session: format!("{base}/session/{session}"),
            _profile: profile,
        })
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Value) -> Result<Value> {
        let url = format!("{}{path}", self.session);
        let mut request = self.http.request(method.clone(), &url);
        if method != reqwest::Method::GET {
            request = request.json(&body);
        }
        let answer: Value = request.send().await?.json().await?;
        let value = answer.get("value").cloned().unwrap_or(Value::Null);
        if let Some(error) = value.get("error") {
            return Err(format!("{method} {path}: {error}: {}", value["message"]).into());
        }
        Ok(value)
    }

    pub async fn goto(&self, url: &str) -> Result<()> {
        self.command(reqwest::Method::POST, "/url", json!({ "url": url }))
            .await?;
        Ok(())
    }

    /// The page's HTML as the browser holds it now.
    pub async fn source(&self) -> Result<String> {
        let value = self
            .command(reqwest::Method::GET, "/source", Value::Null)
            .await?;
        Ok(value.as_str().unwrap_or_default().to_owned())
    }

    pub async fn title(&self) -> Result<String> {
        let value = self
            .command(reqwest::Method::GET, "/title", Value::Null)
            .await?;
        Ok(value.as_str().unwrap_or_default().to_owned())
    }

    pub async fn current_url(&self) -> Result<String> {
        let value = self
            .command(reqwest::Method::GET, "/url", Value::Null)
            .await?;
        Ok(value.as_str().unwrap_or_default().to_owned())
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub async fn execute(&self, script: &str, args: Value) -> Result<Value> {
        let body = json!({ "script": script, "args": args });
        self.command(reqwest::Method::POST, "/execute/sync", body)
            .await
    }

    /// Runs `script`, which calls `arguments[arguments.length - 1]` with its result.
    pub async fn execute_async(&self, script: &str, args: Value) -> Result<Value> {
        let body = json!({ "script": script, "args": args });
        self.command(reqwest::Method::POST, "/execute/async", body)
            .await
    }

    /// The first element matching a CSS selector.
    pub async fn find(&self, css: &str) -> Result<String> {
        let value = self
            .command(
                reqwest::Method::POST,
                "/element",
                json!({ "using": "css selector", "value": css }),
            )
            .await?;
        Ok(value[ELEMENT]
            .as_str()
            .ok_or_else(|| format!("no element {css}"))?
            .to_owned())
    }

    pub async fn click(&self, css: &str) -> Result<()> {
        let element = self.find(css).await?;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            json!({}),
        )
        .await?;
        Ok(())
    }

    pub async fn text(&self, css: &str) -> Result<String> {
        let element = self.find(css).await?;
        let value = self
            .command(
                reqwest::Method::GET,
                &format!("/element/{element}/text"),
                Value::Null,
            )
            .await?;
        Ok(value.as_str().unwrap_or_default().to_owned())
    }

    pub async fn type_into(&self, css: &str, text: &str) -> Result<()> {
        let element = self.find(css).await?;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            json!({ "text": text }),
        )
        .await?;
        Ok(())
    }

    /// The viewport as a PNG.
    pub async fn screenshot(&self) -> Result<Vec<u8>> {
        use base64::Engine as _;
        let value = self
            .command(reqwest::Method::GET, "/screenshot", Value::Null)
            .await?;
        let encoded = value.as_str().ok_or("no screenshot")?;
        Ok(base64::engine::general_purpose::STANDARD.decode(encoded)?)
    }

    pub async fn window(&self, width: u32, height: u32) -> Result<()> {
        self.command(
            reqwest::Method::POST,
            "/window/rect",
            json!({ "width": width, "height": height }),
        )
        .await?;
        Ok(())
    }

    /// Waits up to `limit` for `script` (an expression's function body) to return true.
    pub async fn wait_for(&self, what: &str, script: &str, limit: Duration) -> Result<()> {
        let started = Instant::now();
        loop {
            if self.execute(script, json!([])).await? == Value::Bool(true) {
                return Ok(());
            }
            if started.elapsed() > limit {
                return Err(format!("timed out waiting for {what}").into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn quit(mut self) {
        let _ = self.http.delete(&self.session).send().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
