//! Sinks: where a captured turn goes.
//!
//! A [`Sink`] is a named destination for turn content (CONTRACT_REGISTRY "Sink abstraction").
//! This crate has the two that need no desktop: [`FileSink`] and [`InjectSink`]. The clipboard
//! sink lives with the desktop code (`clippy-desktop`) and implements the same trait under the
//! name [`CLIPBOARD_SINK`].
//!
//! The trait is synchronous and takes `&mut self`: the broker calls `deliver` and waits for the
//! result before it answers the client, and a sink may keep state between deliveries (the
//! clipboard sink keeps the clipboard owner alive). A sink that must block (clipboard, a slow
//! disk) is run by the broker on a worker thread; the trait does not decide that.

mod file;
mod inject;

pub use file::FileSink;
pub use inject::{InjectSink, PASTE_END, PASTE_START, inject_payload};

use crate::{SinkError, TurnMeta};

/// Name of the sink that writes into a session's PTY ([`InjectSink`]).
pub const INJECT_SINK: &str = "inject";
/// Name of the sink that writes a file ([`FileSink`]).
pub const FILE_SINK: &str = "file";
/// Name of the clipboard sink (implemented in `clippy-desktop`).
pub const CLIPBOARD_SINK: &str = "clipboard";

/// A named destination for turn content.
///
/// `content` is the bytes to deliver, already in the format the caller chose (see
/// [`Format::select`](crate::Format::select)); `meta` describes the turn they come from, for
/// sinks that record or announce it. Delivery failures are returned, never retried here, and
/// never touch the registry.
pub trait Sink {
    /// The sink's unique name, e.g. [`FILE_SINK`].
    fn name(&self) -> &str;

    /// Delivers `content` (from the turn described by `meta`).
    ///
    /// # Errors
    ///
    /// A [`SinkError`] saying why the content did not arrive; the destination is left as it was
    /// where the sink can promise that (the file sink can).
    fn deliver(&mut self, content: &[u8], meta: &TurnMeta) -> Result<(), SinkError>;
}

impl<S: Sink + ?Sized> Sink for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn deliver(&mut self, content: &[u8], meta: &TurnMeta) -> Result<(), SinkError> {
        (**self).deliver(content, meta)
    }
}

impl<S: Sink + ?Sized> Sink for &mut S {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn deliver(&mut self, content: &[u8], meta: &TurnMeta) -> Result<(), SinkError> {
        (**self).deliver(content, meta)
    }
}

#[cfg(test)]
pub(crate) mod test_util {

    use crate::{TurnId, TurnMeta, TurnRecord};

    /// A fresh private folder, removed on drop (the workspace's test kit).
    pub(crate) use clippy_testkit::TempDir;

    pub(crate) fn meta() -> TurnMeta {
        TurnRecord::new(TurnId::new("s", 1).expect("id"), 0, &b""[..], "")
            .meta()
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(usize);

    impl Sink for Counting {
        fn name(&self) -> &str {
            "counting"
        }

        fn deliver(&mut self, content: &[u8], _meta: &TurnMeta) -> Result<(), SinkError> {
            self.0 += content.len();
            Ok(())
        }
    }

    #[test]
    fn boxed_and_borrowed_sinks_are_sinks() {
        let meta = test_util::meta();
        let mut boxed: Box<dyn Sink> = Box::new(Counting(0));
        assert_eq!(boxed.name(), "counting");
        boxed.deliver(b"abc", &meta).expect("deliver");

        let mut counting = Counting(0);
        {
            let mut by_ref: Box<dyn Sink + '_> = Box::new(&mut counting);
            by_ref.deliver(b"ab", &meta).expect("deliver");
        }
        assert_eq!(counting.0, 2);
    }
}
