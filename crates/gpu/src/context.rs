//! Opening a GPU: which adapter, which limits, and the few helpers every stage shares (buffers, read-back,
//! dispatch sizes within the device's limits).

use std::sync::atomic::{AtomicU64, Ordering};

use wgpu::util::DeviceExt;

/// Which adapters may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterChoice {
    /// Hardware GPUs only (discrete, integrated or virtual): what `--backend auto` wants, so that a machine
    /// without a GPU falls back to the fast CPU path instead of a software rasterizer.
    Hardware,
    /// A hardware GPU when there is one, else a software device such as lavapipe (asked for explicitly,
    /// and what the tests use).
    Any,
}

/// What can go wrong opening or using the GPU.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no {wanted} GPU adapter found (adapters seen: {seen})")]
    NoAdapter { wanted: &'static str, seen: String },
    #[error("cannot open GPU device {name}: {reason}")]
    Device { name: String, reason: String },
    #[error("reading results back from the GPU failed: {0}")]
    Readback(String),
    #[error("{what} needs a {bytes}-byte buffer, beyond this device's limit of {limit} bytes")]
    TooLarge {
        what: &'static str,
        bytes: u64,
        limit: u64,
    },
}

/// What the host asked of the device so far: the counters `splat bench` reports per step. They depend
/// only on the code and the work, not on the device, so they are the evidence where no real GPU is at hand.
#[derive(Debug, Default)]
pub struct Counters {
    dispatches: AtomicU64,
    submissions: AtomicU64,
    readbacks: AtomicU64,
    readback_bytes: AtomicU64,
}

/// The [`Counters`] at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Compute dispatches recorded into command buffers (a replayed template's count each replay).
    pub dispatches: u64,
    /// Queue submissions (read-backs' own copies included).
    pub submissions: u64,
    /// Blocking read-backs ([`GpuContext::read`]).
    pub readbacks: u64,
    pub readback_bytes: u64,
}

impl CounterSnapshot {
    /// The counts from `earlier` to `self`.
    pub fn since(&self, earlier: &CounterSnapshot) -> CounterSnapshot {
        CounterSnapshot {
            dispatches: self.dispatches - earlier.dispatches,
            submissions: self.submissions - earlier.submissions,
            readbacks: self.readbacks - earlier.readbacks,
            readback_bytes: self.readback_bytes - earlier.readback_bytes,
        }
    }
}

impl Counters {
    pub fn add_dispatches(&self, n: u64) {
        self.dispatches.fetch_add(n, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            dispatches: self.dispatches.load(Ordering::Relaxed),
            submissions: self.submissions.load(Ordering::Relaxed),
            readbacks: self.readbacks.load(Ordering::Relaxed),
            readback_bytes: self.readback_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Invocations per workgroup of every 1D kernel (the device's dispatch limits are counted in them).
pub const WORKGROUP: u32 = 256;

/// Features used where the adapter has them: timestamps (`splat bench`'s device time per stage).
pub const OPTIONAL_FEATURES: wgpu::Features = wgpu::Features::TIMESTAMP_QUERY;

/// An open device and its queue.
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    /// The limits the device was opened with (the adapter's, or lower ones a test asked for).
    pub limits: wgpu::Limits,
    pub counters: Counters,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext")
            .field("adapter", &self.describe())
            .finish()
    }
}

fn is_hardware(info: &wgpu::AdapterInfo) -> bool {
    matches!(
        info.device_type,
        wgpu::DeviceType::DiscreteGpu
            | wgpu::DeviceType::IntegratedGpu
            | wgpu::DeviceType::VirtualGpu
    )
}

/// Preference order: discrete, integrated, virtual, then software (only with [`AdapterChoice::Any`]).
fn rank(info: &wgpu::AdapterInfo) -> u32 {
    match info.device_type {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

impl GpuContext {
    /// Opens the preferred adapter allowed by `choice` with its own limits. `WGPU_BACKEND` (e.g. `vulkan`)
    /// restricts the graphics APIs tried.
    pub fn new(choice: AdapterChoice) -> Result<Self, GpuError> {
        Self::with_limits(choice, |_| {})
    }

    /// Like [`GpuContext::new`], with the adapter's limits passed through `lower` first: tests lower them
    /// to exercise the code paths that split work.
    pub fn with_limits(
        choice: AdapterChoice,
        lower: impl FnOnce(&mut wgpu::Limits),
    ) -> Result<Self, GpuError> {
        Self::with_options(choice, lower, OPTIONAL_FEATURES)
    }

    /// Like [`GpuContext::with_limits`], using only the optional `features` (of
    /// [`OPTIONAL_FEATURES`]) the adapter has.
    pub fn with_options(
        choice: AdapterChoice,
        lower: impl FnOnce(&mut wgpu::Limits),
        features: wgpu::Features,
    ) -> Result<Self, GpuError> {
        pollster::block_on(Self::open(choice, lower, features))
    }

    async fn open(
        choice: AdapterChoice,
        lower: impl FnOnce(&mut wgpu::Limits),
        features: wgpu::Features,
    ) -> Result<Self, GpuError> {
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
        let adapters = instance.enumerate_adapters(wgpu::Backends::all()).await;
        let seen: Vec<String> = adapters
            .iter()
            .map(|a| {
                let i = a.get_info();
                format!("{} ({:?}, {:?})", i.name, i.device_type, i.backend)
            })
            .collect();
        let adapter = adapters
            .into_iter()
            .filter(|a| choice == AdapterChoice::Any || is_hardware(&a.get_info()))
            .min_by_key(|a| rank(&a.get_info()))
            .ok_or_else(|| GpuError::NoAdapter {
                wanted: match choice {
                    AdapterChoice::Hardware => "hardware",
                    AdapterChoice::Any => "usable",
                },
                seen: if seen.is_empty() {
                    "none".into()
                } else {
                    seen.join(", ")
                },
            })?;
        let info = adapter.get_info();
        let mut limits = adapter.limits();
        lower(&mut limits);
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("splat"),
                required_limits: limits.clone(),
                required_features: adapter.features() & features & OPTIONAL_FEATURES,
                ..Default::default()
            })
            .await
            .map_err(|e| GpuError::Device {
                name: info.name.clone(),
                reason: e.to_string(),
            })?;
        Ok(GpuContext {
            device,
            queue,
            info,
            limits,
            counters: Counters::default(),
        })
    }

    /// "name (type, API)" for logs.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?})",
            self.info.name, self.info.device_type, self.info.backend
        )
    }

    /// Whether the device writes timestamps in compute passes.
    pub fn has_timestamps(&self) -> bool {
        self.device
            .features()
            .contains(wgpu::Features::TIMESTAMP_QUERY)
    }

    /// True for a software device (lavapipe, WARP, SwiftShader).
    pub fn is_software(&self) -> bool {
        !is_hardware(&self.info)
    }

    /// A uniform buffer holding `value`.
    pub fn uniform_from<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::bytes_of(value),
                usage: wgpu::BufferUsages::UNIFORM,
            })
    }

    /// A storage buffer holding `data` (at least 16 bytes: bindings may not be empty or shorter than one
    /// element, and the widest element here is a `vec4`).
    pub fn storage_from<T: bytemuck::Pod>(&self, label: &str, data: &[T]) -> wgpu::Buffer {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let mut padded = [0u8; 16];
        let contents = if bytes.len() < 16 {
            padded[..bytes.len()].copy_from_slice(bytes);
            &padded[..]
        } else {
            bytes
        };
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
            })
    }

    /// An uninitialized storage buffer of `bytes` (rounded up to 4, at least 16).
    pub fn storage(&self, label: &str, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes.max(16).next_multiple_of(4),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// A buffer of `triples` indirect dispatch arguments, 16 bytes apart (x, y, z and a spare word),
    /// written by a kernel and read by `dispatch_workgroups_indirect`.
    pub fn indirect_args(&self, label: &str, triples: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: 16 * triples.max(1),
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::INDIRECT
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Finishes `enc` and submits it (counted).
    pub fn submit(&self, enc: wgpu::CommandEncoder) {
        self.submit_buffer(enc.finish());
    }

    /// Submits a finished command buffer (counted).
    pub fn submit_buffer(&self, cb: wgpu::CommandBuffer) {
        self.counters.submissions.fetch_add(1, Ordering::Relaxed);
        self.queue.submit([cb]);
    }

    /// Copies the first `len` elements of `buffer` back to the host (blocking). Used by the per-stage
    /// interface and the tests; a resident training loop reads back only counts and metrics.
    pub fn read<T: bytemuck::Pod>(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<T>, GpuError> {
        self.read_counted(buffer, len, true)
    }

    /// [`GpuContext::read`] for instrumentation (timestamps): not in the counters it would distort.
    pub fn read_uncounted<T: bytemuck::Pod>(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
    ) -> Result<Vec<T>, GpuError> {
        self.read_counted(buffer, len, false)
    }

    fn read_counted<T: bytemuck::Pod>(
        &self,
        buffer: &wgpu::Buffer,
        len: usize,
        counted: bool,
    ) -> Result<Vec<T>, GpuError> {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        if bytes == 0 {
            return Ok(Vec::new());
        }
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("read-back"),
            size: bytes.next_multiple_of(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("read-back"),
            });
        enc.copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes.next_multiple_of(4));
        if counted {
            self.counters.readbacks.fetch_add(1, Ordering::Relaxed);
            self.counters
                .readback_bytes
                .fetch_add(bytes, Ordering::Relaxed);
            self.submit(enc);
        } else {
            self.queue.submit([enc.finish()]);
        }
        let slice = staging.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        rx.recv()
            .map_err(|e| GpuError::Readback(e.to_string()))?
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let view = slice
            .get_mapped_range()
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let out = bytemuck::cast_slice::<u8, T>(&view[..bytes as usize]).to_vec();
        drop(view);
        staging.unmap();
        Ok(out)
    }

    /// Invocations of 256-wide workgroups one 2D dispatch can cover.
    pub fn max_dispatch_invocations(&self) -> usize {
        let max = self.limits.max_compute_workgroups_per_dimension.max(1) as usize;
        max.saturating_mul(max).saturating_mul(WORKGROUP as usize)
    }

    /// Workgroup counts `(x, y)` covering `groups` workgroups within the per-dimension limit; shaders
    /// index with `gid.x + gid.y * num_workgroups.x * WORKGROUP` and skip what lies past the end.
    pub fn dispatch_size(&self, groups: u32) -> (u32, u32) {
        let max = self.limits.max_compute_workgroups_per_dimension.max(1);
        if groups <= max {
            (groups.max(1), 1)
        } else {
            // 65,535^2 workgroups of 256 cover more elements than any binding can hold.
            assert!(
                groups.div_ceil(max) <= max,
                "{groups} workgroups exceed a 2D dispatch of {max} x {max}"
            );
            (max, groups.div_ceil(max))
        }
    }
}
