//! The event types Cloudflare documents for each source, as a
//! subscription's `events` list names them (`namespace.created`); a
//! delivered message's `type` is `cf.`, the source's type, a dot and this
//! name (`cf.kv.namespace.created`).
//!
//! From Cloudflare's "Event subscriptions" pages of each product
//! (developers.cloudflare.com/queues/event-subscriptions/events-schemas/).
//! Event types are plain strings everywhere in this crate: a type
//! Cloudflare adds later is sent and read like these. No page documents
//! the events of `images` or `workers.script`, so there are none here.

/// Workers KV (`kv`).
pub mod kv {
    /// A namespace was created.
    pub const NAMESPACE_CREATED: &str = "namespace.created";
    /// A namespace was deleted.
    pub const NAMESPACE_DELETED: &str = "namespace.deleted";
    /// Every documented `kv` event.
    pub const ALL: [&str; 2] = [NAMESPACE_CREATED, NAMESPACE_DELETED];
}

/// R2 (`r2`).
pub mod r2 {
    /// A bucket was created.
    pub const BUCKET_CREATED: &str = "bucket.created";
    /// A bucket was deleted.
    pub const BUCKET_DELETED: &str = "bucket.deleted";
    /// Every documented `r2` event.
    pub const ALL: [&str; 2] = [BUCKET_CREATED, BUCKET_DELETED];
}

/// Super Slurper, R2's data migrations (`superSlurper`).
pub mod super_slurper {
    /// A migration job started.
    pub const JOB_STARTED: &str = "job.started";
    /// A migration job was paused.
    pub const JOB_PAUSED: &str = "job.paused";
    /// A migration job resumed.
    pub const JOB_RESUMED: &str = "job.resumed";
    /// A migration job completed.
    pub const JOB_COMPLETED: &str = "job.completed";
    /// A migration job was aborted.
    pub const JOB_ABORTED: &str = "job.aborted";
    /// One object was migrated.
    pub const JOB_OBJECT_MIGRATED: &str = "job.object.migrated";
    /// Every documented `superSlurper` event.
    pub const ALL: [&str; 6] = [
        JOB_STARTED,
        JOB_PAUSED,
        JOB_RESUMED,
        JOB_COMPLETED,
        JOB_ABORTED,
        JOB_OBJECT_MIGRATED,
    ];
}

/// Vectorize (`vectorize`).
pub mod vectorize {
    /// An index was created.
    pub const INDEX_CREATED: &str = "index.created";
    /// An index was deleted.
    pub const INDEX_DELETED: &str = "index.deleted";
    /// Every documented `vectorize` event.
    pub const ALL: [&str; 2] = [INDEX_CREATED, INDEX_DELETED];
}

/// The batch jobs of one Workers AI model (`workersAi.model`).
pub mod workers_ai {
    /// A batch was queued.
    pub const BATCH_QUEUED: &str = "batch.queued";
    /// A batch succeeded.
    pub const BATCH_SUCCEEDED: &str = "batch.succeeded";
    /// A batch failed.
    pub const BATCH_FAILED: &str = "batch.failed";
    /// Every documented `workersAi.model` event.
    pub const ALL: [&str; 3] = [BATCH_QUEUED, BATCH_SUCCEEDED, BATCH_FAILED];
}

/// The builds of one Worker (`workersBuilds.worker`).
pub mod workers_builds {
    /// A build started.
    pub const BUILD_STARTED: &str = "build.started";
    /// A build failed.
    pub const BUILD_FAILED: &str = "build.failed";
    /// A build was canceled.
    pub const BUILD_CANCELED: &str = "build.canceled";
    /// A build succeeded.
    pub const BUILD_SUCCEEDED: &str = "build.succeeded";
    /// Every documented `workersBuilds.worker` event.
    pub const ALL: [&str; 4] = [BUILD_STARTED, BUILD_FAILED, BUILD_CANCELED, BUILD_SUCCEEDED];
}

/// The instances of one Workflow (`workflows.workflow`).
pub mod workflows {
    /// An instance was queued.
    pub const INSTANCE_QUEUED: &str = "instance.queued";
    /// An instance started.
    pub const INSTANCE_STARTED: &str = "instance.started";
    /// An instance was paused.
    pub const INSTANCE_PAUSED: &str = "instance.paused";
    /// An instance failed with an error.
    pub const INSTANCE_ERRORED: &str = "instance.errored";
    /// An instance was terminated.
    pub const INSTANCE_TERMINATED: &str = "instance.terminated";
    /// An instance completed.
    pub const INSTANCE_COMPLETED: &str = "instance.completed";
    /// Every documented `workflows.workflow` event.
    pub const ALL: [&str; 6] = [
        INSTANCE_QUEUED,
        INSTANCE_STARTED,
        INSTANCE_PAUSED,
        INSTANCE_ERRORED,
        INSTANCE_TERMINATED,
        INSTANCE_COMPLETED,
    ];
}
