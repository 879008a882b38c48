//! The clipboard sink: one thread owns the desktop clipboard for the broker's lifetime.
//!
//! An X selection lives as long as its owner, so the clipboard object cannot belong to the
//! `clippy-ctl` that asked for the delivery (it exits at once); the broker keeps it, on a
//! thread of its own (setting the clipboard talks to the X server and may block), started on
//! the first clipboard delivery. The thread opens the clipboard on first use and keeps it, so
//! what was copied stays pasteable until another program takes the selection. Without
//! `$DISPLAY` in the broker's environment, each delivery fails with `sink_failed` saying so.

use std::sync::{Arc, mpsc};

use clippy_desktop::{ClipboardProvider, X11Clipboard};
use clippy_registry::{CLIPBOARD_SINK, SinkError};
use mio::Waker;

use crate::server::{FileDone, run_delivery_worker};
use clippy_broker_core::ConnId;

/// One clipboard delivery.
struct Job {
    content: Vec<u8>,
    reply_to: ConnId,
    reply_id: u32,
}

/// The handle the event loop keeps; the thread starts on the first [`ClipboardOwner::deliver`].
pub(crate) struct ClipboardOwner {
    jobs: Option<mpsc::Sender<Job>>,
    done: mpsc::Sender<FileDone>,
    waker: Arc<Waker>,
}

impl ClipboardOwner {
    /// Results go to `done`, followed by a wake of `waker`.
    pub(crate) fn new(done: mpsc::Sender<FileDone>, waker: Arc<Waker>) -> ClipboardOwner {
        ClipboardOwner {
            jobs: None,
            done,
            waker,
        }
    }

    /// Queues a delivery; its result arrives on the `done` channel. An error here means the
    /// thread could not be started (or has died) and no result will come.
    pub(crate) fn deliver(
        &mut self,
        content: Vec<u8>,
        reply_to: ConnId,
        reply_id: u32,
    ) -> Result<(), SinkError> {
        if self.jobs.is_none() {
            let (tx, rx) = mpsc::channel::<Job>();
            let (done, waker) = (self.done.clone(), Arc::clone(&self.waker));
            std::thread::Builder::new()
                .name("clippy-broker-clipboard".into())
                .spawn(move || owner(&rx, &done, &waker))
                .map_err(|e| failed(format!("cannot start the clipboard thread: {e}")))?;
            self.jobs = Some(tx);
        }
        let job = Job {
            content,
            reply_to,
            reply_id,
        };
        match self.jobs.as_ref().map(|jobs| jobs.send(job)) {
            Some(Ok(())) => Ok(()),
            _ => {
                self.jobs = None;
                Err(failed("the clipboard thread is gone".into()))
            }
        }
    }
}

fn failed(message: String) -> SinkError {
    SinkError::Other {
        sink: CLIPBOARD_SINK.into(),
        source: message.into(),
    }
}

/// The thread: opens the clipboard when first needed (and again after a failure), and keeps it.
fn owner(jobs: &mpsc::Receiver<Job>, done: &mpsc::Sender<FileDone>, waker: &Waker) {
    let mut clipboard: Option<X11Clipboard> = None;
    run_delivery_worker(jobs, done, waker, |job| {
        let result = match clipboard.as_mut() {
            Some(open) => Ok(open),
            None => X11Clipboard::open().map(|open| clipboard.insert(open)),
        }
        .and_then(|open| open.write(&job.content))
        .map_err(|e| failed(e.to_string()));
        if result.is_err() {
            // Perhaps the X server went away: start afresh next time.
            clipboard = None;
        }
        FileDone {
            reply_to: job.reply_to,
            reply_id: job.reply_id,
            result,
        }
    });
}
