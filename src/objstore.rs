//! Where a warehouse lives: a folder in an object store. The commit log ([`crate::commit`])
//! and DataFusion both read and write through the same [`object_store`] store, so a
//! warehouse is one of:
//!
//! - a local folder (a path, or a `file://` URL): `LocalFileSystem`, whose put-if-absent is
//!   a hard link (atomic);
//! - `s3://BUCKET/PREFIX` (with the `s3` feature): `AmazonS3`, configured by the standard
//!   environment (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_REGION`, `AWS_ALLOW_HTTP`, ...) through `AmazonS3Builder::from_env`;
//! - `gs://BUCKET/PREFIX` (with the `gcs` feature): `GoogleCloudStorage`, configured by
//!   `GoogleCloudStorageBuilder::from_env` (`GOOGLE_APPLICATION_CREDENTIALS`,
//!   `GOOGLE_SERVICE_ACCOUNT`, `GOOGLE_SERVICE_ACCOUNT_KEY`, or gcloud's default credentials);
//! - `az://CONTAINER/PREFIX` (with the `azure` feature): `MicrosoftAzure`, configured by
//!   `MicrosoftAzureBuilder::from_env` (`AZURE_STORAGE_ACCOUNT_NAME` and a key, SAS, token,
//!   service principal, managed identity or the Azure CLI);
//! - an in-memory store (tests), `memory://NAME/`.
//!
//! [`remote_store`] opens the bucket of any such URL; input paths in stores
//! (`crate::inputs`) are read through it too.
//!
//! The library is synchronous where it writes; [`block_on`] runs the store's futures on one
//! process-wide runtime (one, so that an HTTP client's pooled connections outlive each call).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use object_store::path::Path as ObjPath;
use object_store::ObjectStore;

use crate::error::{Error, Result};

/// A warehouse's folder in an object store.
#[derive(Debug, Clone)]
pub struct Root {
    pub store: Arc<dyn ObjectStore>,
    /// The folder inside the store.
    pub prefix: ObjPath,
    /// The folder as a URL with a trailing `/` (`file:///srv/wh/`, `s3://bucket/wh/`).
    pub url: url::Url,
    /// The local folder, when the store is the local file system.
    pub local: Option<PathBuf>,
}

impl Root {
    /// The warehouse at `loc`: a local path, a `file://` URL, or `s3://BUCKET/PREFIX`.
    pub fn open(loc: &Path) -> Result<Root> {
        let text = loc.to_string_lossy();
        if is_supported_remote(loc) {
            let (store, _) = remote_store(&text)?;
            return Root::with_store(store, &text);
        }
        Root::local(&crate::location::local_path(loc)?)
    }

    /// A local folder (need not exist yet).
    pub fn local(dir: &Path) -> Result<Root> {
        let abs = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        let prefix = ObjPath::from_absolute_path(&abs).map_err(|e| {
            Error::Invalid(format!("{}: not usable as a warehouse: {e}", dir.display()))
        })?;
        let url = url::Url::from_directory_path(&abs).map_err(|()| {
            Error::Invalid(format!("{}: not an absolute local path", abs.display()))
        })?;
        Ok(Root {
            store: Arc::new(object_store::local::LocalFileSystem::new()),
            prefix,
            url,
            local: Some(abs),
        })
    }

    /// A folder `prefix` in any store, known to DataFusion under `url` (`scheme://authority/`
    /// where the store is registered, then the folder).
    pub fn with_store(store: Arc<dyn ObjectStore>, url: &str) -> Result<Root> {
        let mut url =
            url::Url::parse(url).map_err(|e| Error::Invalid(format!("{url}: not a URL: {e}")))?;
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        let prefix = ObjPath::from_url_path(url.path())
            .map_err(|e| Error::Invalid(format!("{url}: {e}")))?;
        Ok(Root {
            store,
            prefix,
            url,
            local: None,
        })
    }

    /// A fresh in-memory store holding one warehouse at its root (tests).
    pub fn in_memory(name: &str) -> Root {
        Root {
            store: Arc::new(object_store::memory::InMemory::new()),
            prefix: ObjPath::default(),
            url: url::Url::parse(&format!("memory://{name}/")).expect("a valid URL"),
            local: None,
        }
    }

    /// The object of `rel` (a `/`-separated path inside the warehouse).
    pub fn path(&self, rel: &str) -> ObjPath {
        rel.split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |p, part| p.join(part))
    }

    /// `obj` relative to the warehouse folder, when it is inside it.
    pub fn relative(&self, obj: &ObjPath) -> Option<String> {
        let parts: Vec<String> = obj
            .prefix_match(&self.prefix)?
            .map(|p| p.as_ref().to_string())
            .collect();
        Some(parts.join("/"))
    }

    /// Where DataFusion reads `rel`: an absolute path for a local warehouse, else a URL.
    pub fn location_of(&self, rel: &str) -> String {
        match &self.local {
            Some(dir) => dir.join(rel).to_string_lossy().into_owned(),
            None => format!("{}{rel}", self.url),
        }
    }

    /// The store's own URL (`scheme://authority`), where DataFusion must find it.
    pub fn store_url(&self) -> String {
        format!("{}://{}", self.url.scheme(), self.url.authority())
    }

    /// Registers a remote store with DataFusion under its `scheme://authority` (the local
    /// file system is registered already).
    pub fn register_store(&self, ctx: &datafusion::prelude::SessionContext) -> Result<()> {
        self.register_in(&ctx.runtime_env())
    }

    /// [`Root::register_store`] in a runtime (before a session is made with it).
    pub fn register_in(
        &self,
        runtime: &datafusion::execution::runtime_env::RuntimeEnv,
    ) -> Result<()> {
        if self.local.is_none() {
            let url = url::Url::parse(&self.store_url())
                .map_err(|e| Error::Invalid(format!("{}: {e}", self.store_url())))?;
            runtime.register_object_store(&url, self.store.clone());
        }
        Ok(())
    }

    /// How the warehouse is named in messages.
    pub fn shown(&self) -> PathBuf {
        match &self.local {
            Some(d) => d.clone(),
            None => PathBuf::from(self.url.as_str().trim_end_matches('/')),
        }
    }

    /// A warehouse error naming this warehouse.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::Warehouse {
            path: self.shown(),
            message: message.into(),
        }
    }

    /// A store error on `rel`, naming the warehouse.
    pub fn store_error(&self, rel: &str, e: object_store::Error) -> Error {
        self.error(format!("{rel}: {e}"))
    }
}

/// The object stores runlog opens, by URL scheme: (scheme, cargo feature, what the URL's
/// host names).
pub const REMOTE_SCHEMES: [(&str, &str, &str); 3] = [
    ("s3", "s3", "BUCKET"),
    ("gs", "gcs", "BUCKET"),
    ("az", "azure", "CONTAINER"),
];

/// The store holding a remote location (`s3://BUCKET/...`, `gs://BUCKET/...`,
/// `az://CONTAINER/...`), configured by the standard environment, and the location's URL.
/// A scheme whose cargo feature is not built in is refused naming the feature.
pub fn remote_store(text: &str) -> Result<(Arc<dyn ObjectStore>, url::Url)> {
    let url =
        url::Url::parse(text).map_err(|e| Error::Invalid(format!("{text}: not a URL: {e}")))?;
    let scheme = url.scheme().to_ascii_lowercase();
    let Some(&(_, feature, host)) = REMOTE_SCHEMES.iter().find(|(s, _, _)| *s == scheme) else {
        return Err(Error::Invalid(format!(
            "{text}: {scheme}:// is not an object store runlog opens (s3://, gs://, az://)"
        )));
    };
    let Some(bucket) = url.host_str().filter(|b| !b.is_empty()) else {
        return Err(Error::Invalid(format!(
            "{text}: a location in {scheme}:// is {scheme}://{host}/PREFIX"
        )));
    };
    let Some(store) = open_bucket(&scheme, text, bucket) else {
        return Err(Error::Invalid(format!(
            "{text}: this runlog was built without {scheme}:// support; build it with \
             `--features {feature}`"
        )));
    };
    Ok((store?, url))
}

/// The bucket's store, when its scheme's feature is built in.
fn open_bucket(scheme: &str, text: &str, bucket: &str) -> Option<Result<Arc<dyn ObjectStore>>> {
    #[cfg(feature = "s3")]
    if scheme == "s3" {
        return Some(s3_store(text, bucket));
    }
    #[cfg(feature = "gcs")]
    if scheme == "gs" {
        let env = object_store::gcp::GoogleCloudStorageBuilder::from_env();
        return Some(gcs_store(
            text,
            bucket,
            env,
            gcloud_default_credentials().as_deref(),
        ));
    }
    #[cfg(feature = "azure")]
    if scheme == "az" {
        let env = object_store::azure::MicrosoftAzureBuilder::from_env();
        return Some(azure_store(text, bucket, env));
    }
    let _ = (scheme, text, bucket);
    None
}

#[cfg(feature = "s3")]
fn s3_store(text: &str, bucket: &str) -> Result<Arc<dyn ObjectStore>> {
    let store = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| {
            Error::Invalid(format!(
                "{text}: {e} (S3 is configured by AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ALLOW_HTTP)"
            ))
        })?;
    Ok(Arc::new(store))
}

/// gcloud's application default credentials file, where `gcloud auth application-default
/// login` writes it, when it exists.
#[cfg(feature = "gcs")]
fn gcloud_default_credentials() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let p = Path::new(&home).join(".config/gcloud/application_default_credentials.json");
    p.is_file().then_some(p)
}

/// A Google Cloud Storage bucket. Without credentials in `builder` or gcloud's default file
/// (`adc`), the store would fall back to a VM's metadata server, which elsewhere only fails
/// after its retries: refused at once instead, saying what to set.
#[cfg(feature = "gcs")]
fn gcs_store(
    text: &str,
    bucket: &str,
    builder: object_store::gcp::GoogleCloudStorageBuilder,
    adc: Option<&Path>,
) -> Result<Arc<dyn ObjectStore>> {
    use object_store::gcp::GoogleConfigKey as K;
    const HOW: &str = "Google Cloud Storage is configured by GOOGLE_APPLICATION_CREDENTIALS \
        (a credentials file), GOOGLE_SERVICE_ACCOUNT (a service account file) or \
        GOOGLE_SERVICE_ACCOUNT_KEY (its JSON), or by `gcloud auth application-default login`";
    let has = |k: K| builder.get_config_value(&k).is_some_and(|v| !v.is_empty());
    let anonymous = builder
        .get_config_value(&K::SkipSignature)
        .is_some_and(|v| v == "true");
    let given = [
        K::ServiceAccount,
        K::ServiceAccountKey,
        K::ApplicationCredentials,
    ];
    if !given.into_iter().any(has) && adc.is_none() && !anonymous {
        return Err(Error::Invalid(format!(
            "{text}: no Google Cloud credentials found; {HOW}"
        )));
    }
    let store = builder
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| Error::Invalid(format!("{text}: {e} ({HOW})")))?;
    Ok(Arc::new(store))
}

/// An Azure Blob Storage container. Without an account the builder refuses; without any
/// credential it would fall back to a VM's managed identity endpoint, which elsewhere only
/// fails after its retries: refused at once instead, saying what to set.
#[cfg(feature = "azure")]
fn azure_store(
    text: &str,
    container: &str,
    builder: object_store::azure::MicrosoftAzureBuilder,
) -> Result<Arc<dyn ObjectStore>> {
    use object_store::azure::AzureConfigKey as K;
    const HOW: &str = "Azure Blob Storage is configured by AZURE_STORAGE_ACCOUNT_NAME and one of \
        AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_KEY, AZURE_STORAGE_TOKEN, \
        AZURE_CLIENT_ID with AZURE_CLIENT_SECRET and AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE, \
        AZURE_MSI_ENDPOINT (managed identity), AZURE_USE_AZURE_CLI=true or \
        AZURE_STORAGE_USE_EMULATOR=true";
    let has = |k: K| builder.get_config_value(&k).is_some_and(|v| !v.is_empty());
    let on = |k: K| builder.get_config_value(&k).is_some_and(|v| v == "true");
    let emulator = on(K::UseEmulator);
    if !has(K::AccountName) && !emulator {
        return Err(Error::Invalid(format!(
            "{text}: no Azure storage account given; {HOW}"
        )));
    }
    let credential = [
        K::AccessKey,
        K::SasKey,
        K::Token,
        K::ClientId,
        K::FederatedTokenFile,
        K::MsiEndpoint,
    ]
    .into_iter()
    .any(has)
        || on(K::UseAzureCli)
        || on(K::SkipSignature)
        || emulator;
    if !credential {
        return Err(Error::Invalid(format!(
            "{text}: no Azure credentials found; {HOW}"
        )));
    }
    let store = builder
        .with_container_name(container)
        .build()
        .map_err(|e| Error::Invalid(format!("{text}: {e} ({HOW})")))?;
    Ok(Arc::new(store))
}

/// A DataFusion object-store registry that opens the store of an `s3://`, `gs://` or
/// `az://` URL on first use, configured by the environment ([`remote_store`]), as Ballista's
/// own `ballista-scheduler` and `ballista-executor` do for S3: for a process that reads
/// warehouses it was not told of beforehand, like a Ballista executor. Stores registered
/// explicitly are used first.
#[derive(Debug, Default)]
pub struct EnvStores {
    known: datafusion::execution::object_store::DefaultObjectStoreRegistry,
}

impl datafusion::execution::object_store::ObjectStoreRegistry for EnvStores {
    fn register_store(
        &self,
        url: &url::Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.known.register_store(url, store)
    }

    fn deregister_store(&self, url: &url::Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        self.known.deregister_store(url)
    }

    fn get_store(&self, url: &url::Url) -> datafusion::error::Result<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.known.get_store(url) {
            return Ok(store);
        }
        if !is_supported_remote(Path::new(url.as_str())) {
            return self.known.get_store(url);
        }
        let bucket = format!("{}://{}/", url.scheme(), url.authority());
        let (store, _) = remote_store(&bucket)
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        self.known.register_store(url, store.clone());
        Ok(store)
    }
}

/// Whether `loc` names a warehouse or input in a remote object store (`s3://...`).
pub fn is_remote(loc: &Path) -> bool {
    crate::location::scheme(&loc.to_string_lossy()).is_some_and(|s| !s.eq_ignore_ascii_case("file"))
}

/// Whether `loc` is a location in an object store this runlog knows (`s3://`, `gs://`,
/// `az://`; opening one whose feature is not built in says which feature it needs).
pub fn is_supported_remote(loc: &Path) -> bool {
    crate::location::scheme(&loc.to_string_lossy()).is_some_and(|s| {
        REMOTE_SCHEMES
            .iter()
            .any(|(r, _, _)| s.eq_ignore_ascii_case(r))
    })
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("runlog-objstore")
            .enable_all()
            .build()
            .expect("the object-store runtime starts")
    })
}

/// Runs a store future to its end from synchronous code, inside a runtime or not.
pub fn block_on<F>(f: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        // Not on a runtime's own thread: `block_on` there would panic.
        std::thread::scope(|s| {
            s.spawn(|| runtime().block_on(f))
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    } else {
        runtime().block_on(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_urls_and_relative_names() {
        let r = Root::local(Path::new("/srv/wh")).unwrap();
        assert_eq!(
            r.path("events/a.parquet").as_ref(),
            "srv/wh/events/a.parquet"
        );
        assert_eq!(r.url.as_str(), "file:///srv/wh/");
        assert_eq!(
            r.location_of("events/a.parquet"),
            "/srv/wh/events/a.parquet"
        );
        assert_eq!(
            r.relative(&r.path("_log/1.json")).as_deref(),
            Some("_log/1.json")
        );
        assert_eq!(r.relative(&ObjPath::from("srv/other/x")), None);
        let m = Root::with_store(
            Arc::new(object_store::memory::InMemory::new()),
            "s3://bucket/some/wh",
        )
        .unwrap();
        assert_eq!(m.path("_log/1.json").as_ref(), "some/wh/_log/1.json");
        assert_eq!(
            m.location_of("t/x.parquet"),
            "s3://bucket/some/wh/t/x.parquet"
        );
        assert_eq!(m.store_url(), "s3://bucket");
        assert!(is_remote(Path::new("s3://b/x")));
        assert!(!is_remote(Path::new("file:///x")));
        assert!(!is_remote(Path::new("/x")));
    }

    #[test]
    fn remote_urls_name_their_bucket_and_a_known_scheme() {
        for (url, want) in [
            (
                "s3:///wh",
                "s3:///wh: a location in s3:// is s3://BUCKET/PREFIX",
            ),
            (
                "az:///x",
                "az:///x: a location in az:// is az://CONTAINER/PREFIX",
            ),
            (
                "ftp://h/x",
                "ftp://h/x: ftp:// is not an object store runlog opens",
            ),
        ] {
            let e = remote_store(url).err().unwrap().to_string();
            assert!(e.starts_with(want), "{url}: {e}");
        }
        for url in ["s3://b/x", "gs://b/x", "az://c/x", "S3://b/x"] {
            assert!(is_supported_remote(Path::new(url)), "{url}");
        }
        assert!(!is_supported_remote(Path::new("http://h/x")));
        assert!(!is_supported_remote(Path::new("/srv/logs")));
    }

    #[cfg(not(feature = "gcs"))]
    #[test]
    fn a_scheme_not_built_in_names_its_feature() {
        let e = remote_store("gs://b/x").err().unwrap().to_string();
        assert!(e.contains("--features gcs"), "{e}");
    }

    #[cfg(feature = "gcs")]
    #[test]
    fn gcs_without_credentials_says_what_to_set() {
        use object_store::gcp::GoogleCloudStorageBuilder as B;
        let e = gcs_store("gs://b/wh", "b", B::new(), None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("gs://b/wh: no Google Cloud credentials"),
            "{e}"
        );
        assert!(e.contains("GOOGLE_APPLICATION_CREDENTIALS"), "{e}");
        // Credentials (here: none needed, a public bucket) make a store; nothing is sent yet.
        assert!(gcs_store("gs://b/wh", "b", B::new().with_skip_signature(true), None).is_ok());
        // So does gcloud's default file, which the builder reads.
        let dir = tempfile::tempdir().unwrap();
        let adc = dir.path().join("adc.json");
        std::fs::write(&adc, "{\"type\": \"unknown\"}").unwrap();
        let e = gcs_store("gs://b/wh", "b", B::new(), Some(&adc));
        assert!(!e
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains("no Google Cloud credentials"));
    }

    #[cfg(feature = "azure")]
    #[test]
    fn azure_without_an_account_or_credentials_says_what_to_set() {
        use object_store::azure::MicrosoftAzureBuilder as B;
        let e = |b: B| {
            azure_store("az://c/wh", "c", b)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let none = e(B::new());
        assert!(
            none.starts_with("az://c/wh: no Azure storage account"),
            "{none}"
        );
        assert!(none.contains("AZURE_STORAGE_ACCOUNT_NAME"), "{none}");
        let no_key = e(B::new().with_account("acct"));
        assert!(
            no_key.starts_with("az://c/wh: no Azure credentials"),
            "{no_key}"
        );
        assert_eq!(e(B::new().with_account("acct").with_access_key("a2V5")), "");
    }
}
