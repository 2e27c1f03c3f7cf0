#pragma once
#include "core/error.hpp"
