//! The flag the long-running commands (`notify`, `hotkeys`) watch to end cleanly.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::error::CtlError;

/// A flag raised by SIGTERM or SIGINT (instead of their default of ending the process at once).
pub fn on_term_or_interrupt() -> Result<Arc<AtomicBool>, CtlError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop)).map_err(|source| CtlError::Io {
            context: "cannot handle signals".into(),
            source,
        })?;
    }
    Ok(stop)
}
