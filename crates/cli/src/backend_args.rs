//! `--backend`: which implementation of the pipeline stages a command runs ([`BackendArg`]), opened
//! once into a [`ChosenBackend`] that makes every backend (and the GPU's resident engine) of a run.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use splat_render::{Backend, CpuBackend, ReferenceBackend};
use splat_train::resident::ResidentEngine;
use splat_train::run::RunConfig;

/// Which implementation of the pipeline stages to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The fast CPU path (all cores).
    #[default]
    Cpu,
    /// The plain reference the others are tested against (its rasterizer runs rows of tiles in parallel, with the same bits as on one thread).
    Reference,
    /// The GPU (wgpu: Vulkan, Metal or DX12); a software device such as lavapipe is accepted when there
    /// is no hardware GPU. Training keeps the state, images and cameras on the device and runs blocks of
    /// steps there; densification and opacity resets run on the CPU between blocks (see NOTES.md).
    Gpu,
    /// A hardware GPU when there is one, else the fast CPU path (never a software GPU).
    Auto,
}

/// A resolved backend choice: the GPU device is opened once and shared by every backend made from it.
#[derive(Clone)]
pub enum ChosenBackend {
    Cpu,
    Reference,
    Gpu(Arc<splat_gpu::GpuContext>, splat_gpu::BackwardSums),
}

impl BackendArg {
    /// The name `--backend` takes, as recorded in a run's `config.json`.
    pub fn value_name(self) -> String {
        self.to_possible_value()
            .expect("no variant is skipped")
            .get_name()
            .to_owned()
    }

    /// Opens the GPU when one is wanted and prints which adapter was chosen.
    pub fn choose(self) -> Result<ChosenBackend> {
        use splat_gpu::{AdapterChoice, GpuContext};
        let announce = |ctx: GpuContext| {
            eprintln!(
                "GPU: {}{}",
                ctx.describe(),
                if ctx.is_software() {
                    " (a software device: correct but slow)"
                } else {
                    ""
                }
            );
            ChosenBackend::Gpu(Arc::new(ctx), splat_gpu::BackwardSums::Records)
        };
        Ok(match self {
            BackendArg::Cpu => ChosenBackend::Cpu,
            BackendArg::Reference => ChosenBackend::Reference,
            BackendArg::Gpu => announce(
                GpuContext::new(AdapterChoice::Any)
                    .context("--backend gpu: cannot open a GPU (install a Vulkan driver, e.g. mesa-vulkan-drivers)")?,
            ),
            BackendArg::Auto => match GpuContext::new(AdapterChoice::Hardware) {
                Ok(ctx) => announce(ctx),
                Err(e) => {
                    eprintln!("--backend auto: {e}; using the fast CPU path");
                    ChosenBackend::Cpu
                }
            },
        })
    }

    /// Chooses and makes one backend.
    pub fn make(self) -> Result<Box<dyn Backend + Send>> {
        Ok(self.choose()?.make())
    }
}

impl ChosenBackend {
    /// With `on` (`--gpu-atomic-backward`), the GPU's rasterize backward sums per-Gaussian gradients
    /// with atomic adds instead of records and a gather in tile order: faster on real GPUs, but the
    /// rounding then varies from run to run. An error on the CPU backends.
    pub fn atomic_backward(self, on: bool) -> Result<Self> {
        match self {
            ChosenBackend::Gpu(ctx, _) if on => {
                Ok(ChosenBackend::Gpu(ctx, splat_gpu::BackwardSums::Atomic))
            }
            _ if on => bail!("--gpu-atomic-backward needs --backend gpu (or auto with a GPU)"),
            other => Ok(other),
        }
    }

    pub fn make(&self) -> Box<dyn Backend + Send> {
        match self {
            ChosenBackend::Cpu => Box::new(CpuBackend::new()),
            ChosenBackend::Reference => Box::new(ReferenceBackend),
            ChosenBackend::Gpu(ctx, sums) => {
                Box::new(splat_gpu::GpuBackend::new(ctx.clone()).with_backward_sums(*sums))
            }
        }
    }

    /// The resident engine of this backend (the GPU's), making blocks of training steps run on the
    /// device that holds the state.
    pub fn resident(
        &self,
    ) -> Option<impl Fn(&[splat_io::dataset::View]) -> Box<dyn ResidentEngine>> {
        match self {
            ChosenBackend::Gpu(ctx, sums) => {
                let (ctx, sums) = (ctx.clone(), *sums);
                Some(move |views: &[splat_io::dataset::View]| {
                    Box::new(
                        splat_gpu::GpuResident::new(ctx.clone(), views).with_backward_sums(sums),
                    ) as Box<dyn ResidentEngine>
                })
            }
            _ => None,
        }
    }

    pub fn name(&self) -> String {
        match self {
            ChosenBackend::Cpu => "cpu".into(),
            ChosenBackend::Reference => "reference".into(),
            ChosenBackend::Gpu(ctx, _) => format!("gpu ({})", ctx.info.name),
        }
    }
}

/// The backend of a run: `--backend` when given, else the one `config.json` records (a resumed run
/// goes on where it started), else the default. Says so when `--backend` changes a resumed run's.
pub fn resolve_backend(arg: Option<BackendArg>, cfg: &RunConfig, say: bool) -> Result<BackendArg> {
    let recorded = match cfg.backend.as_deref() {
        None => None,
        Some(name) => Some(BackendArg::from_str(name, true).map_err(|_| {
            anyhow::anyhow!(
                "config.json names the backend {name:?}, which this build does not know; choose one with --backend"
            )
        })?),
    };
    Ok(match (arg, recorded) {
        (Some(a), Some(r)) if a != r => {
            if say {
                eprintln!(
                    "note: the run was started on the {} backend; going on with --backend {}",
                    r.value_name(),
                    a.value_name()
                );
            }
            a
        }
        (Some(a), _) => a,
        (None, Some(r)) => r,
        (None, None) => {
            if say {
                eprintln!(
                    "note: config.json does not say which backend the run was started on (an older splat wrote it); using {}",
                    BackendArg::default().value_name()
                );
            }
            BackendArg::default()
        }
    })
}
