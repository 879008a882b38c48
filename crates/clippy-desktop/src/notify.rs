//! Desktop notifications (freedesktop, over D-Bus), behind the `notify` feature.

use crate::error::DesktopError;

/// Shows a desktop notification: `summary` as its title, `body` below. An error notification
/// is marked critical (it stays until dismissed on most desktops).
///
/// # Errors
///
/// [`DesktopError::Unavailable`] when there is no notification service (no D-Bus session bus,
/// no notification daemon), or when clippy was built without the `notify` feature; the caller
/// then rings the bell and writes to stderr.
pub fn notify(summary: &str, body: &str, error: bool) -> Result<(), DesktopError> {
    imp::notify(summary, body, error)
}

#[cfg(feature = "notify")]
mod imp {
    use notify_rust::{Notification, Timeout, Urgency};

    use crate::error::DesktopError;

    pub(super) fn notify(summary: &str, body: &str, error: bool) -> Result<(), DesktopError> {
        Notification::new()
            .appname("clippy")
            .summary(summary)
            .body(body)
            .urgency(if error {
                Urgency::Critical
            } else {
                Urgency::Normal
            })
            .timeout(if error {
                Timeout::Never
            } else {
                Timeout::Milliseconds(4000)
            })
            .show()
            .map(drop)
            .map_err(|e| DesktopError::Unavailable(format!("no desktop notifications: {e}")))
    }
}

#[cfg(not(feature = "notify"))]
mod imp {
    use crate::error::DesktopError;

    pub(super) fn notify(_summary: &str, _body: &str, _error: bool) -> Result<(), DesktopError> {
        Err(DesktopError::Unavailable(
            "no desktop notifications: clippy was built without the `notify` feature".into(),
        ))
    }
}
