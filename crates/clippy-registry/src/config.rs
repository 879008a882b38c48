//! Registry configuration.

use crate::RegistryError;

/// Default turns kept per session (CONTRACT_REGISTRY, DECISION ring-default-depth).
pub const DEFAULT_RING_DEPTH: usize = 32;
/// Default content limit per turn: 4 MiB (CONTRACT_REGISTRY, DECISION max-turn-size).
pub const DEFAULT_MAX_TURN_BYTES: usize = 4 * 1024 * 1024;

/// How much a [`Registry`](crate::Registry) keeps.
///
/// ```
/// use clippy_registry::RegistryConfig;
///
/// let config = RegistryConfig { ring_depth: 8, ..RegistryConfig::default() };
/// config.validate()?;
/// assert!(RegistryConfig { ring_depth: 0, ..config }.validate().is_err());
/// # Ok::<(), clippy_registry::RegistryError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegistryConfig {
    /// Turns kept per session; the oldest is evicted beyond it. At least 1. Default 32.
    pub ring_depth: usize,
    /// Content bytes kept per turn (and, separately, text bytes); longer turns are cut and
    /// marked `truncated`. From 1 to `u32::MAX` (the byte length is a `u32`). Default 4 MiB.
    pub max_turn_bytes: usize,
}

impl Default for RegistryConfig {
    fn default() -> RegistryConfig {
        RegistryConfig {
            ring_depth: DEFAULT_RING_DEPTH,
            max_turn_bytes: DEFAULT_MAX_TURN_BYTES,
        }
    }
}

impl RegistryConfig {
    /// Checks the ranges.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidConfig`] naming the field when `ring_depth` is 0, or
    /// `max_turn_bytes` is 0 or above `u32::MAX`.
    pub fn validate(&self) -> Result<(), RegistryError> {
        if self.ring_depth == 0 {
            return Err(RegistryError::InvalidConfig {
                field: "ring_depth",
                value: self.ring_depth,
                reason: "must be at least 1",
            });
        }
        if self.max_turn_bytes == 0 || u32::try_from(self.max_turn_bytes).is_err() {
            return Err(RegistryError::InvalidConfig {
                field: "max_turn_bytes",
                value: self.max_turn_bytes,
                reason: "must be between 1 and 4294967295",
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_contract_recommendations() {
        let c = RegistryConfig::default();
        assert_eq!(c.ring_depth, 32);
        assert_eq!(c.max_turn_bytes, 4 << 20);
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn out_of_range_values_are_refused_with_the_field_named() {
        let depth0 = RegistryConfig {
            ring_depth: 0,
            ..RegistryConfig::default()
        };
        let err = depth0.validate().expect_err("depth 0");
        assert_eq!(
            err.to_string(),
            "invalid registry configuration: ring_depth = 0 must be at least 1"
        );
        let bytes0 = RegistryConfig {
            max_turn_bytes: 0,
            ..RegistryConfig::default()
        };
        assert!(matches!(
            bytes0.validate(),
            Err(RegistryError::InvalidConfig {
                field: "max_turn_bytes",
                ..
            })
        ));
        let one = RegistryConfig {
            ring_depth: 1,
            max_turn_bytes: 1,
        };
        assert_eq!(one.validate(), Ok(()));
    }

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn max_turn_bytes_must_fit_a_u32() {
        let huge = RegistryConfig {
            max_turn_bytes: u32::MAX as usize + 1,
            ..RegistryConfig::default()
        };
        assert!(huge.validate().is_err());
        let max = RegistryConfig {
            max_turn_bytes: u32::MAX as usize,
            ..RegistryConfig::default()
        };
        assert_eq!(max.validate(), Ok(()));
    }
}
