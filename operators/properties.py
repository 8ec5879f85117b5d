"""Property declarations shared by the operators and the panel's settings (ui/settings.py):
annotation mixin classes that both inherit, so each setting is declared exactly once and
the panel can copy its values across."""

from math import pi, radians

from bpy.props import BoolProperty, EnumProperty, FloatProperty, FloatVectorProperty, IntProperty

PATTERN_ITEMS = (
    ("SINGLE", "Single", "One ray"),
    ("FAN", "Fan", "Rays from the origin filling a cone around the direction"),
    ("GRID", "Grid", "Parallel rays from a square grid of origins around the origin"),
)
OUTPUT_ITEMS = (
    ("AUTO", "Automatic", "Empties for a few hits, one point mesh for many"),
    ("EMPTIES", "Empties", "One empty per hit, Z axis along the normal"),
    ("POINT_MESH", "Point Mesh", "One mesh object whose vertices are the hits"),
)
TERRAIN_MODEL_ITEMS = (
    (
        "SURFACE",
        "Surface",
        "A terrain is its triangles as Blender draws them, hit from either side "
        "(as scene.ray_cast sees it)",
    ),
    (
        "SOLID",
        "Solid",
        "A terrain is the ground below its surface, in the terrain's local axes (local -Z "
        "is down): a ray starting under it hits at once, one entering from the side hits "
        "the side wall",
    ),
)
DIRECTION_SOURCE_ITEMS = (
    (
        "CURSOR",
        "Direction or Cursor",
        "The Direction property, or the 3D cursor's -Z axis when it is not set",
    ),
    ("VIEW", "View", "The viewing direction of the 3D viewport the operator runs in"),
)

# Settings the Fire Ray button copies from the panel to the operator.
FIRE_RAY_SETTINGS = (
    "direction_source",
    "max_distance",
    "pattern",
    "fan_count",
    "fan_angle",
    "grid_rows",
    "grid_columns",
    "grid_width",
    "output",
    "marker_size",
    "terrain_model",
)
# Settings the Sphere Cast button copies from the panel to the operator (the panel's
# cast_radius goes to the operator's radius; the pattern is the one the rays use).
SPHERE_CAST_SETTINGS = (
    "max_distance",
    "pattern",
    "fan_count",
    "fan_angle",
    "grid_rows",
    "grid_columns",
    "grid_width",
    "output",
    "terrain_model",
)
# Settings the Visibility button copies from the panel to the operator.
VISIBILITY_SETTINGS = ("observer_height", "target_height", "terrain_model")

# The smallest Marker Size (Blender draws no empty smaller than 0.0001).
MARKER_MIN_SIZE = 0.001

# Limits are soft only (soft_min, soft_max: the sliders' range). Blender clamps a value
# outside a hard min or max without a word, both an operator argument from Python and an
# assignment (fan_count=0 would run as 1, radius=-1 as 0), so the operators check the values
# they use instead and refuse one out of range with a message naming it.


# Each setting is declared once, in a mixin class of annotations that the operators and the
# panel's PropertyGroup inherit, as Blender's own scripts do (bpy registers the annotations of
# plain base classes, bases first in the order listed, then the class's own). Blender's
# property annotations are calls, which mypy rejects as types; fake-bpy-module cannot describe
# them, hence `type: ignore[valid-type]`.


class DirectionSourceProperty:
    direction_source: EnumProperty(  # type: ignore[valid-type]
        name="Direction From", items=DIRECTION_SOURCE_ITEMS, default="CURSOR"
    )


class RayPatternProperties:
    """How far the rays reach, their pattern and how hits are written."""

    max_distance: FloatProperty(  # type: ignore[valid-type]
        name="Max Distance",
        description="How far the rays reach",
        subtype="DISTANCE",
        unit="LENGTH",
        default=100.0,
        soft_min=0.001,
    )
    pattern: EnumProperty(  # type: ignore[valid-type]
        name="Pattern", items=PATTERN_ITEMS, default="SINGLE"
    )
    fan_count: IntProperty(  # type: ignore[valid-type]
        name="Rays",
        description="Number of rays in the fan",
        default=16,
        soft_min=1,
        soft_max=10_000,
    )
    fan_angle: FloatProperty(  # type: ignore[valid-type]
        name="Cone Angle",
        description="Full apex angle of the fan's cone",
        subtype="ANGLE",
        default=radians(30.0),
        soft_min=0.0,
        soft_max=pi,
    )
    grid_rows: IntProperty(  # type: ignore[valid-type]
        name="Rows", default=4, soft_min=1, soft_max=1000
    )
    grid_columns: IntProperty(  # type: ignore[valid-type]
        name="Columns", default=4, soft_min=1, soft_max=1000
    )
    grid_width: FloatProperty(  # type: ignore[valid-type]
        name="Width",
        description="Side of the square the grid's origins cover",
        subtype="DISTANCE",
        unit="LENGTH",
        default=2.0,
        soft_min=0.0,
    )
    output: EnumProperty(  # type: ignore[valid-type]
        name="Output", items=OUTPUT_ITEMS, default="AUTO"
    )


class MarkerSizeProperty:
    marker_size: FloatProperty(  # type: ignore[valid-type]
        name="Marker Size",
        description="Display size of the hit empties",
        subtype="DISTANCE",
        unit="LENGTH",
        default=0.2,
        soft_min=MARKER_MIN_SIZE,
    )


class TerrainModelProperty:
    terrain_model: EnumProperty(  # type: ignore[valid-type]
        name="Terrain",
        description="What a terrain (a displaced grid) is to the queries",
        items=TERRAIN_MODEL_ITEMS,
        default="SURFACE",
    )


class SightProperties:
    """The eye above the observer and the point above each terrain vertex."""

    observer_height: FloatProperty(  # type: ignore[valid-type]
        name="Observer Height",
        description="How far above the origin (along world +Z) the observer's eye is",
        subtype="DISTANCE",
        unit="LENGTH",
        default=1.7,
    )
    target_height: FloatProperty(  # type: ignore[valid-type]
        name="Target Height",
        description="How far above each terrain vertex (along world +Z) the point to be "
        "seen is: 0 asks whether the ground itself is visible",
        subtype="DISTANCE",
        unit="LENGTH",
        default=0.0,
    )


# The Sphere Cast's radius, which the panel keeps as cast_radius (one definition, two names;
# the stubs type a property call as returning None).
CAST_RADIUS = FloatProperty(  # type: ignore[func-returns-value]
    name="Radius",
    description="Radius of the moving sphere (0 casts a ray from the start to the end)",
    subtype="DISTANCE",
    unit="LENGTH",
    default=0.25,
    soft_min=0.0,
)


class ReachProperties:
    """How far an observer sees: a horizontal limit and the earth's curvature."""

    max_distance: FloatProperty(  # type: ignore[valid-type]
        name="Max Distance",
        description="How far from the observer (horizontally) a vertex may be seen; farther "
        "vertices are not visible. 0: no limit",
        subtype="DISTANCE",
        unit="LENGTH",
        default=0.0,
        soft_min=0.0,
    )
    earth_curvature: BoolProperty(  # type: ignore[valid-type]
        name="Earth Curvature",
        description="Lower every terrain vertex by (1 - refraction) d^2 / (2 R), d its "
        "horizontal distance from the observer and R the earth's radius (6,371 km), as GIS "
        "viewsheds do over long distances",
        default=False,
    )
    refraction: FloatProperty(  # type: ignore[valid-type]
        name="Refraction",
        description="The atmosphere's refraction coefficient, with Earth Curvature: light "
        "bends along the earth, as if its radius were R / (1 - refraction)",
        default=1.0 / 7.0,
        soft_min=0.0,
        soft_max=1.0,
    )


def point_property(name: str, description: str):
    """A point in the scene (Origin, Start, End): a length vector, filled from the 3D cursor
    when a call does not set it, so it is not remembered between calls (SKIP_SAVE)."""
    return FloatVectorProperty(
        name=name,
        description=description,
        subtype="TRANSLATION",
        unit="LENGTH",
        size=3,
        options={"SKIP_SAVE"},
    )
